"""Trusting what a project file asks of this machine.

A repository's `.lathe/config.toml` is written by whoever last changed the repository:
a teammate, a `git pull`, or an agent. Most of what it sets is harmless (the turn limit,
a verify command that runs in the sandbox, rules that deny more), but some settings run
commands on this machine outside the sandbox (hooks; the verify command when there is
no sandbox), turn the sandbox or its rules off, or decide where the API key is sent.
Those apply only once the user trusts them, and trust is tied to their content: a
fingerprint of exactly those settings as the file sets them (the verify command always
among them, so one trust serves sandboxed and unsandboxed runs alike, and those a flag
overrides too, so it serves runs with and without the flag), recorded per project file in
`LATHE_HOME/trusted-projects.json`. A change asks again.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from lathe.config.keys import KeyPath, format_key
from lathe.config.schema import Config
from lathe.config.secrets import masked_value

if TYPE_CHECKING:
    from lathe.config.loader import LoadedConfig

_STORE_NAME = "trusted-projects.json"
# Keys under these run commands on the host, loosen the sandbox or its rules, say where
# the key goes, or put words in lathe's mouth (a profile's prompts replace lathe's own;
# a larger memory lets one project's run fill every other project's prompt). Turn
# limits, timeouts and the token and cost budgets stay a project's own to set, as they
# were: a team caps its runs there (asking trust for that pushed CI to --trust-project,
# which trusts hooks too), and a flag outranks it.
# Of `serve`, only any_endpoint: its limits decide no one's key or access, and who may
# connect (--host, --allow-remote, the token) is never in a config file.
# permissions.approval only when it asks less than `ask`; the verify command only when
# commands run outside the sandbox (see project_settings); the keys below only as they
# say.
_NEEDS_TRUST: tuple[KeyPath, ...] = (
    ("hooks",),
    ("providers",),
    ("profiles",),
    ("base_url",),
    ("permissions", "allow"),
    ("permissions", "protect"),
    ("permissions", "sandbox"),
    ("permissions", "env_passthrough"),
    ("permissions", "executor"),
    ("container",),
    ("memory", "memory_max_bytes"),  # user memory is in every project's prompt
    ("serve", "any_endpoint"),  # a client may send the server's key to any URL
)

# What every request sends, only when the project raises it past the schema's default:
# a project's 100 MB instruction budget sent 570 KB with each request; one that lowers
# it asks for less than any run gets.
_NEEDS_TRUST_RAISED: tuple[KeyPath, ...] = (
    ("memory", "instructions_max_bytes"),
    ("skills", "prompt_share"),
    ("mcp", "schema_share"),
    ("tools", "output_max_bytes"),
)

# Of a [models.NAME] entry, what sizes every share of the window (skills, MCP schemas,
# outputs) or what max_cost_usd counts. Its provider, id and profile choose no more than
# the top-level `model`, `provider` and `profile` a project sets freely: a provider or
# profile it defines itself needs trust under [providers] or [profiles].
_MODEL_KEYS_NEEDING_TRUST = frozenset(
    {"context_window", "max_output_tokens", "input_price", "output_price",
     "cached_input_price", "cache_write_price"}
)  # fmt: skip


@dataclass(frozen=True)
class ProjectSettings:
    """The settings of one project file that need the user's trust."""

    file: Path
    settings: tuple[tuple[str, Any], ...]  # (dotted key, value as the file sets it)

    @property
    def keys(self) -> list[str]:
        return [key for key, _ in self.settings]

    @property
    def fingerprint(self) -> str:
        text = json.dumps(self.settings, sort_keys=True, default=str)
        return hashlib.sha256(text.encode()).hexdigest()

    def describe(self) -> list[str]:
        """One line a setting, as it would read in the file, its credentials masked
        (`masked_value`): what is trusted is the setting itself, what is shown is what
        a person needs to judge it."""
        return [
            f"{key} = {json.dumps(masked_value(value), default=str, ensure_ascii=False)}"
            for key, value in self.settings
        ]


def project_settings(
    loaded: LoadedConfig, *, commands_sandboxed: bool = False, serving: bool = True
) -> ProjectSettings | None:
    """What the project file sets that may need trust; None when none of it needs trust
    for this run (or there is no project file). The settings, and so the fingerprint,
    are every one of them the file sets, whatever the command line: a flag, `-c` or the
    environment overriding one decides only that it does not apply to this run, so
    needs no trust now, and one trust serves runs with and without the override. The
    verify command needs trust only when commands run outside the sandbox (it would run
    on this machine, before the first model call), and `serve.*` only to a server
    (`serving`); both are part of the fingerprint either way."""
    if loaded.project_file is None:
        return None
    chosen, needed = [], False
    for path, value in loaded.project_values:
        verify = path == ("agent", "verify") and bool(value)
        if not (verify or _needs_trust(path, value)):
            continue
        chosen.append((format_key(path), value))
        if _overridden(loaded, path):
            continue
        if verify:
            needed = needed or not commands_sandboxed
        elif path[:1] == ("serve",):
            needed = needed or serving
        else:
            needed = True
    if not needed:
        return None
    return ProjectSettings(Path(loaded.project_file).resolve(), tuple(chosen))


def _overridden(loaded: LoadedConfig, path: KeyPath) -> bool:
    """Whether a flag, `-c` or the environment replaces what the project file sets at
    `path` (a rule list they add to keeps the file's rules, so it is not replaced)."""
    origin = loaded.origins.get(path)
    return origin is not None and origin.layer in ("env", "flag", "override") and not origin.earlier


# Keys whose empty or false value asks for nothing (no allow rule, nothing passed through,
# only local endpoints).
_TIGHT_WHEN_EMPTY = (
    ("permissions", "allow"),
    ("permissions", "env_passthrough"),
    ("serve", "any_endpoint"),
)


def _needs_trust(path: KeyPath, value: Any) -> bool:
    if path == ("permissions", "approval"):
        return value not in ("read-only", "ask")  # auto or full: fewer questions asked
    if not value and path in _TIGHT_WHEN_EMPTY:
        return False
    if path in _NEEDS_TRUST_RAISED:
        return not isinstance(value, int | float) or value > _schema_default(path)
    if path[:1] == ("models",):
        return path[-1] in _MODEL_KEYS_NEEDING_TRUST
    return any(path[: len(prefix)] == prefix for prefix in _NEEDS_TRUST)


def _schema_default(path: KeyPath) -> Any:
    section: Any = Config
    for part in path[:-1]:
        section = section.model_fields[part].annotation
    return section.model_fields[path[-1]].default


_DECLINED = "declined:"


def trusted_fingerprint(home: Path, file: Path) -> str | None:
    """The fingerprint recorded as trusted for `file`, if any."""
    recorded = _load(home).get(str(file))
    return None if recorded is None or recorded.startswith(_DECLINED) else recorded


def decline(home: Path, settings: ProjectSettings) -> None:
    """Record that the person said no to exactly these settings, so they are not asked
    again until the settings change (trusting them later replaces the record)."""
    store = _load(home)
    store[str(settings.file)] = _DECLINED + settings.fingerprint
    _save(home, store)


def is_declined(home: Path, settings: ProjectSettings) -> bool:
    return _load(home).get(str(settings.file)) == _DECLINED + settings.fingerprint


def is_trusted(home: Path, settings: ProjectSettings) -> bool:
    return trusted_fingerprint(home, settings.file) == settings.fingerprint


def untrusted_settings(
    loaded: LoadedConfig, home: Path, *, commands_sandboxed: bool, serving: bool = False
) -> ProjectSettings | None:
    """What the project file sets that needs trust (`project_settings`) when it is not
    trusted yet; None when nothing needs it or all of it is trusted."""
    settings = project_settings(loaded, commands_sandboxed=commands_sandboxed, serving=serving)
    return None if settings is None or is_trusted(home, settings) else settings


def trust(home: Path, settings: ProjectSettings) -> None:
    """Record `settings` as trusted, replacing what was recorded for its file."""
    store = _load(home)
    store[str(settings.file)] = settings.fingerprint
    _save(home, store)


def revoke(home: Path, file: Path) -> bool:
    """Forget the trust recorded for `file`; whether there was any."""
    store = _load(home)
    found = store.pop(str(file.resolve()), None) is not None
    if found:
        _save(home, store)
    return found


def untrusted_message(settings: ProjectSettings, home: Path) -> str:
    """Why a run cannot use these settings yet, and the two ways to trust them."""
    state = _state(settings, home)
    return (
        f"the project file {settings.file} sets {', '.join(settings.keys)}, which run "
        f"commands on this machine outside the sandbox, loosen the sandbox or its rules, or "
        f"decide where your API key goes, and these settings are {state}. Review the file, "
        "then run `lathe trust` in this workspace, or pass --trust-project for this run"
    )


def untrusted_serve_message(settings: ProjectSettings, home: Path) -> str | None:
    """Why `lathe serve` cannot start with these untrusted settings, when some of them are
    the server's own (`serve.*`); None when none are (a server uses no other setting of
    the file where it starts)."""
    keys = [key for key in settings.keys if key.startswith("serve.")]
    if not keys:
        return None
    return (
        f"the project file {settings.file} sets {', '.join(keys)}, which lets a client send "
        f"this server's API key to any endpoint, and these settings are "
        f"{_state(settings, home)}. Review the file, then run `lathe trust` in "
        f"{settings.file.parent.parent}, or start the server in another folder"
    )


def _state(settings: ProjectSettings, home: Path) -> str:
    earlier = trusted_fingerprint(home, settings.file)
    return "changed since you trusted them" if earlier else "not trusted yet"


def _store_path(home: Path) -> Path:
    return home / _STORE_NAME


def _load(home: Path) -> dict[str, str]:
    try:
        data = json.loads(_store_path(home).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return {str(k): str(v) for k, v in data.items()} if isinstance(data, dict) else {}


def _save(home: Path, store: dict[str, str]) -> None:
    from lathe.atomic_write import write_atomic

    path = _store_path(home)
    path.parent.mkdir(parents=True, exist_ok=True)
    write_atomic(path, (json.dumps(store, indent=2, sort_keys=True) + "\n").encode())
