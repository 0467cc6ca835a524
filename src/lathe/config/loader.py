"""Loading the effective configuration from its layers, remembering where each value came from.

Layers, lowest first: defaults (with the built-in catalog) < user file < project file
< environment < flags < `-c key=value` overrides. Each layer is flattened to leaves
(checking every key against the schema, so a typo is reported with the file it is in),
the leaves are merged (a later layer replaces a leaf, tables merge key by key, lists
are replaced whole, except the permission rule lists, which add up so that a project
file or a flag can add a deny rule but never drop one), and the result is validated
once. A validation error is reported against the layer that supplied the offending
value.

API keys are not part of the configuration: `ResolvedModel.api_key()` reads them from the
environment when a provider is about to be built.
"""

from __future__ import annotations

import os
import tomllib
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field, replace
from functools import cached_property
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ValidationError

from lathe.config.keys import KeyPath, Node, format_key, nest, node_of, parse_key, walk
from lathe.config.schema import Config
from lathe.config.secrets import looks_like_secret, mask_secret, masked_value
from lathe.errors import UsageError

Layer = Literal["default", "user", "project", "env", "flag", "override"]
_PRECEDENCE: tuple[Layer, ...] = ("default", "user", "project", "env", "flag", "override")
_ROOT: Node = ("model", Config)
# Lists every layer adds to: a rule the user file denies holds whatever a project says.
_ACCUMULATING: frozenset[KeyPath] = frozenset(
    {("permissions", "allow"), ("permissions", "ask"), ("permissions", "deny")}
)

# Environment variables that set a config key. API key variables are absent on purpose:
# they are read when the model is resolved and never enter the configuration.
ENV_KEYS: dict[str, KeyPath] = {
    "LATHE_MODEL": ("model",),
    "LATHE_PROVIDER": ("provider",),
    "LATHE_BASE_URL": ("base_url",),
    "LATHE_MAX_TURNS": ("agent", "max_turns"),
    "LATHE_VERIFY": ("agent", "verify"),
    "LATHE_APPROVAL": ("permissions", "approval"),
    "OPENAI_BASE_URL": ("providers", "openai", "base_url"),
    "ANTHROPIC_BASE_URL": ("providers", "anthropic", "base_url"),
}

# Variables that count as given when set but empty (any other empty one is unset): an
# empty LATHE_VERIFY is a `LATHE_VERIFY=$CMD` with CMD unset, and the schema refuses it
# rather than run with no check.
_EMPTY_IS_GIVEN = frozenset({"LATHE_VERIFY"})


@dataclass(frozen=True)
class Origin:
    """Where one effective value came from."""

    layer: Layer
    source: str = ""
    """The file path, variable name or -c key; empty for defaults and flags."""
    earlier: tuple[Origin, ...] = ()
    """For a list that adds up across layers: the lower layers that gave entries too."""

    def __str__(self) -> str:
        if self.earlier:
            return " + ".join(str(o) for o in (*self.earlier, replace(self, earlier=())))
        match self.layer:
            case "default" | "flag":
                return self.layer
            case "user" | "project":
                return f"{self.layer} file {self.source}"
            case "env":
                return f"env {self.source}"
            case "override":
                return f"-c {self.source}"

    @property
    def where(self) -> str:
        """How an error message names this origin: a file by its path."""
        return self.source if self.layer in ("user", "project") else str(self)


@dataclass(frozen=True)
class LoadedConfig:
    config: Config
    origins: Mapping[KeyPath, Origin]
    """Origin of every leaf (and empty table) some layer set; a leaf not listed is a
    schema default."""
    user_file: Path
    """Where the user file is read from, whether or not it exists."""
    project_file: Path | None
    """The project file that was read, if one was found."""
    project_root: Path = field(default=Path())
    """Where `config init --project` writes: the workspace's git root, else the workspace."""
    project_values: tuple[tuple[KeyPath, Any], ...] = ()
    """Every leaf the project file sets, as written there (for trusting what it asks)."""

    def origin(self, key: str | KeyPath) -> str:
        """Where the effective value of one leaf key came from, e.g. "env LATHE_MODEL"."""
        path = parse_key(key) if isinstance(key, str) else tuple(key)
        if path in self.origins:
            return str(self.origins[path])
        if path in self._leaves:
            return "default"
        raise KeyError(f"{format_key(path)} is not a key with a value")

    def set_by(self, layer: Layer) -> list[KeyPath]:
        """Keys a layer set, e.g. to ask before trusting what a project file changes."""
        return [path for path, origin in self.origins.items() if origin.layer == layer]

    def values(self) -> list[tuple[KeyPath, Any, Origin]]:
        """Every effective leaf value with its origin, in schema order."""
        default = Origin("default")
        return [(p, v, self.origins.get(p, default)) for p, v in self._leaves.items()]

    def shown_values(self) -> list[tuple[str, Any, Origin]]:
        """`values` as a person or a record may see them: dotted keys, secrets masked."""
        from lathe.config.keys import format_key

        return [(format_key(key), masked_value(v), origin) for key, v, origin in self.values()]

    @cached_property
    def _leaves(self) -> dict[KeyPath, Any]:
        return dict(walk(self.config.model_dump(), _ROOT))


def user_config_path(environ: Mapping[str, str] | None = None) -> Path:
    environ = os.environ if environ is None else environ
    if environ.get("LATHE_CONFIG"):
        return Path(environ["LATHE_CONFIG"]).expanduser()
    from platformdirs import user_config_dir

    return Path(user_config_dir("lathe", appauthor=False)) / "config.toml"


def project_root(workspace: Path) -> Path:
    """The nearest ancestor holding `.git` (the workspace itself included), else the
    workspace: project config above a repository never applies to it."""
    workspace = workspace.resolve()
    for directory in (workspace, *workspace.parents):
        if (directory / ".git").exists():
            return directory
    return workspace


def find_project_file(workspace: Path) -> Path | None:
    """The nearest `.lathe/config.toml` from the workspace up to its project root."""
    workspace = workspace.resolve()
    root = project_root(workspace)
    for directory in (workspace, *workspace.parents):
        candidate = directory / ".lathe" / "config.toml"
        if candidate.is_file():
            return candidate
        if directory == root:
            return None
    return None


def load_config(
    workspace: Path,
    *,
    flags: Mapping[str | KeyPath, Any] | None = None,
    overrides: Sequence[str] = (),
    environ: Mapping[str, str] | None = None,
    leave_out: Collection[KeyPath] = (),
) -> LoadedConfig:
    """Build the effective configuration for a run in `workspace`.

    `flags` maps dotted keys to the values of command-line options, e.g.
    `{"model": "gpt-4o", "agent.max_turns": 10}`; None values are options not given.
    `overrides` are `-c key=value` strings; a value is parsed as TOML when it parses
    (`5`, `true`, `["a"]`, `"x"`), else taken as a string. `leave_out` names settings of
    the project file to read as if it did not set them (those it may not set until it is
    trusted): the layers below give them, and a table left empty is gone. Raises
    UsageError naming the file or variable, the key and the problem.
    """
    environ = os.environ if environ is None else environ
    user_file = user_config_path(environ)
    project_file = find_project_file(workspace)

    layers: list[tuple[Origin, dict[str, Any]]] = [(Origin("default"), Config().model_dump())]
    if _user_file_exists(user_file, named=bool(environ.get("LATHE_CONFIG"))):
        layers.append((Origin("user", str(user_file)), _read_toml(user_file)))
    if project_file is not None:
        project = _without_keys(_read_toml(project_file), leave_out)
        layers.append((Origin("project", str(project_file)), project))
    for var, path in ENV_KEYS.items():
        if environ.get(var) or (var in _EMPTY_IS_GIVEN and var in environ):
            layers.append((Origin("env", var), nest(path, _env_value(environ[var]))))
    for key, value in (flags or {}).items():
        if value is not None:
            path = parse_key(key) if isinstance(key, str) else tuple(key)
            layers.append((Origin("flag"), nest(path, value)))
    for text in overrides:
        key, value = _parse_override(text)
        layers.append((Origin("override", format_key(key)), nest(key, value)))

    merged: dict[str, Any] = {}
    origins: dict[KeyPath, Origin] = {}
    project_values: list[tuple[KeyPath, Any]] = []
    for origin, raw in layers:
        for path, value, is_leaf in _flatten(raw, _ROOT, (), origin):
            if origin.layer == "project" and is_leaf:
                project_values.append((path, value))
            if path in _ACCUMULATING:
                _check_rules(path, value, origin)
            leaf_origin = origin
            if path in _ACCUMULATING and path in origins and isinstance(value, list):
                value = _added_up(_lookup(merged, path), value)
                leaf_origin = _with_earlier(origins[path], origin)
            _place(merged, path, value, is_leaf)
            origins[path] = leaf_origin
    try:
        config = Config.model_validate(merged)
    except ValidationError as exc:
        raise UsageError(_describe(exc, origins)) from None
    _check_references(config, origins)
    return LoadedConfig(
        config=config,
        origins=origins,
        user_file=user_file,
        project_file=project_file,
        project_root=project_root(workspace),
        project_values=tuple(project_values),
    )


def _without_keys(raw: dict[str, Any], keys: Collection[KeyPath]) -> dict[str, Any]:
    """`raw` (a file's tables) without the values at `keys`, and without the tables that
    held only those (a `[providers.x]` made of them alone)."""

    def pruned(table: dict[str, Any], below: tuple[str, ...]) -> dict[str, Any]:
        kept: dict[str, Any] = {}
        for name, value in table.items():
            path = (*below, name)
            if path in keys:
                continue
            if isinstance(value, dict):
                inner = pruned(value, path)
                if value and not inner:
                    continue
                value = inner
            kept[name] = value
        return kept

    return pruned(raw, ()) if keys else raw


def _check_rules(path: KeyPath, rules: Any, origin: Origin) -> None:
    """Refuse a permission rule of one layer that cannot work (`rule_problem`), naming the
    layer and the entry, counted in that layer (the lists add up across layers). A value
    that is no list of strings is the schema's to report."""
    from lathe.config.permission_rules import rule_problem

    if not isinstance(rules, list):
        return
    for index, text in enumerate(rules):
        if isinstance(text, str) and (problem := rule_problem(text)):
            raise UsageError(f"{_blame(path, {path: origin})}[{index}]: {problem}")


def _user_file_exists(user_file: Path, *, named: bool) -> bool:
    """Whether there is a user file to read. One that cannot be read as meant is refused
    (UsageError), since every user setting, a deny rule too, would be dropped: a folder,
    or a file LATHE_CONFIG (`named`) names that is not there. `/dev/null` reads as empty:
    no user file, on purpose. Only the platform's default file may be missing."""
    if user_file.is_dir():
        named_as = "LATHE_CONFIG names" if named else "the user config is"
        raise UsageError(f"{named_as} a folder, {user_file}: give the path of the config file")
    exists = user_file.exists()
    if named and not exists:
        raise UsageError(
            f"LATHE_CONFIG names {user_file}, which does not exist; fix the path, create "
            "the file (`lathe config init` writes a starter one there), or set "
            "LATHE_CONFIG=/dev/null for no user file"
        )
    return exists


def _lookup(merged: dict[str, Any], path: KeyPath) -> Any:
    table: Any = merged
    for part in path:
        table = table.get(part) if isinstance(table, dict) else None
    return table


def _added_up(earlier: Any, later: list[Any]) -> list[Any]:
    base = list(earlier) if isinstance(earlier, list) else []
    return base + [item for item in later if item not in base]


def _with_earlier(previous: Origin, current: Origin) -> Origin:
    if previous.layer == "default":
        return current
    return replace(current, earlier=(*previous.earlier, replace(previous, earlier=())))


def _read_toml(path: Path) -> dict[str, Any]:
    """The tables of a TOML file; a leading byte order mark, which some editors write,
    is not part of the text (as for instruction files and SKILL.md)."""
    try:
        return tomllib.loads(path.read_bytes().decode("utf-8").removeprefix("\ufeff"))
    except tomllib.TOMLDecodeError as exc:
        raise UsageError(f"{path}: invalid TOML: {exc}") from None
    except UnicodeDecodeError:
        raise UsageError(f"{path}: invalid TOML: the file is not UTF-8 text") from None
    except OSError as exc:
        raise UsageError(f"{path}: cannot read: {exc.strerror or exc}") from None


def _parse_override(text: str) -> tuple[KeyPath, Any]:
    key_text, sep, value_text = text.partition("=")
    if not sep:
        raise UsageError(f"-c {text}: expected KEY=VALUE, e.g. -c agent.max_turns=20")
    key = parse_key(key_text.strip())
    try:
        value = tomllib.loads(f"v = {value_text}")["v"]
    except tomllib.TOMLDecodeError:
        value = value_text
    return key, value


def _flatten(
    raw: Any, node: Node, path: KeyPath, origin: Origin
) -> list[tuple[KeyPath, Any, bool]]:
    """Leaves of one layer as (path, value, is_leaf); is_leaf False marks an empty table
    that must still exist (a provider declared with all defaults)."""
    kind, inner = node
    if kind == "leaf":
        return [(path, raw, True)]
    if not isinstance(raw, dict):
        raise UsageError(f"{origin.where}: {format_key(path)}: expected a table, got {_shown(raw)}")
    out: list[tuple[KeyPath, Any, bool]] = [] if raw or not path else [(path, {}, False)]
    for key, value in raw.items():
        child_path = (*path, key)
        if kind == "model":
            fields = inner.model_fields
            if key not in fields:
                raise UsageError(_unknown_key(child_path, inner, origin))
            out.extend(_flatten(value, node_of(fields[key].annotation), child_path, origin))
        else:
            out.extend(_flatten(value, inner, child_path, origin))
    return out


def _place(merged: dict[str, Any], path: KeyPath, value: Any, is_leaf: bool) -> None:
    table = merged
    for part in path[:-1]:
        table = table.setdefault(part, {})
    if is_leaf:
        table[path[-1]] = value
    else:
        table.setdefault(path[-1], {})


def _unknown_key(path: KeyPath, section: type[BaseModel], origin: Origin) -> str:
    from difflib import get_close_matches

    from lathe.config.keys import schema_paths

    name = path[-1]
    message = f"{origin.where}: unknown key {format_key(path)!r}"
    siblings = list(section.model_fields)
    close = get_close_matches(name, siblings, n=1, cutoff=0.6)
    if close:
        message += f" (did you mean {format_key((*path[:-1], close[0]))!r}?)"
    else:
        # The key may be right but in the wrong table, e.g. max_turns at the top level.
        anywhere: dict[str, KeyPath] = {}
        for key in schema_paths(Config):  # a name in two tables: the first one's
            anywhere.setdefault(key[-1], key)
        close = get_close_matches(name, list(anywhere), n=1, cutoff=0.8)
        if close:
            message += f" (did you mean {format_key(anywhere[close[0]])!r}?)"
        else:
            message += f"; valid keys here: {', '.join(siblings)}"
    if any(word in name.lower() for word in ("key", "token", "secret", "password")):
        message += (
            ". API keys are never stored in config files: export the key in an environment "
            "variable and set providers.NAME.api_key_env to that variable's name"
        )
    return message


def _env_value(text: str) -> Any:
    """A variable's text as a setting: digits alone are a number (the schema is strict,
    so that `max_turns = true` in a file is an error, not 1; a variable is all text)."""
    return int(text) if text.strip().isdigit() else text


def _describe(exc: ValidationError, origins: Mapping[KeyPath, Origin]) -> str:
    """Every problem, on one line (an error is one line that starts with `lathe: `)."""
    problems = []
    for error in exc.errors():
        path = tuple(str(part) for part in error["loc"])
        problems.append(f"{_blame(path, origins)}: {_problem(error)}")
    return "; ".join(problems)


# Flags whose name is not the key's last part ("agent.max_turns" is --max-turns).
_FLAG_NAMES = {"agent.max_cost_usd": "--max-cost"}


def flag_name(key: str) -> str:
    """The command-line flag that sets a config key, as the user typed it."""
    return _FLAG_NAMES.get(key, "--" + key.rsplit(".", 1)[-1].replace("_", "-"))


def _blame(path: KeyPath, origins: Mapping[KeyPath, Origin]) -> str:
    """The layer and key to fix, e.g. `FILE: KEY`, `env VAR: KEY` or `-c KEY`."""
    origin, key = _origin_near(path, origins), format_key(path) or "config"
    match origin.layer:
        case "override" if origin.source == key:
            return str(origin)
        case "default":
            return key
        case "flag":
            return flag_name(key)
        case _:
            return f"{origin.where}: {key}"


def _problem(error: Any) -> str:
    kind, message = error["type"], error["msg"]
    if kind == "missing":
        return "required key is missing"
    if kind == "value_error":
        return message.removeprefix("Value error, ")
    if message.startswith("Input should be "):
        expected = message.removeprefix("Input should be ")
        if kind.startswith(("greater", "less")):
            return f"must be {expected}, got {_shown(error['input'])}"
        if kind != "literal_error":
            expected = expected.split(", unable")[0]
        return f"expected {expected}, got {_shown(error['input'])}"
    return message


def _shown(value: Any) -> str:
    if isinstance(value, str) and looks_like_secret(value):
        return repr(mask_secret(value))
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def _origin_near(path: KeyPath, origins: Mapping[KeyPath, Origin]) -> Origin:
    """The origin to blame for an error at `path`: its own, else the latest layer that set
    something in the nearest enclosing table (an entry missing a key, a section whose
    keys disagree). Where the defaults set `path` itself (the empty `mcp.servers`
    table), the latest layer that set something under it is blamed: a check of the whole
    table fails for what a layer put in it."""
    if path in origins and origins[path].layer != "default":
        return origins[path]
    for cut in range(len(path), 0, -1):
        near = [o for p, o in origins.items() if p[:cut] == path[:cut]]
        if near:
            return max(near, key=lambda o: _PRECEDENCE.index(o.layer))
    return Origin("default")


def _check_references(config: Config, origins: Mapping[KeyPath, Origin]) -> None:
    from difflib import get_close_matches

    def fail(path: KeyPath, provider: str) -> None:
        close = get_close_matches(provider, list(config.providers), n=1)
        hint = f" (did you mean {close[0]!r}?)" if close else ""
        known = ", ".join(sorted(config.providers))
        raise UsageError(
            f"{_blame(path, origins)}: unknown provider {provider!r}{hint}; "
            f"known providers: {known}"
        )

    if config.provider is not None and config.provider not in config.providers:
        fail(("provider",), config.provider)
    for name, entry in config.models.items():
        if entry.provider not in config.providers:
            fail(("models", name, "provider"), entry.provider)
    from lathe.config.profiles import check_profile_names, unknown_profile

    for path, profile in check_profile_names(config):
        raise UsageError(f"{_blame(path, origins)}: {unknown_profile(config, profile)}")
