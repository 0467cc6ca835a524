"""Which MCP servers a workspace declares, where each came from, and whether it may run.

Servers come from lathe's config layers (`[mcp.servers.NAME]` in the user or the
project `.lathe/config.toml`) and from the project's `.mcp.json` (`mcpServers`, the
format other agents read); a name in lathe's config wins over the same name in
`.mcp.json`. A server a *project* file declares (or changes) runs a command on this
machine, or sends data to a URL, chosen by whoever last changed the repository, so it
starts only once trusted — config/trust.py's approach: a fingerprint of exactly what
that file sets for its servers, recorded per file in LATHE_HOME; a change asks again.
Trust comes from `--trust-project-mcp` (recorded), an interactive yes (recorded), or
`mcp.trust_project_servers = true` in the user file.

`${VAR}` (or `${VAR:-default}`) in `command`, `env`, `headers`, `args`, `url` and `cwd`
is expanded from the environment only when the server starts (`expanded`); the config
keeps the reference.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from lathe.config.schema import McpServerConfig
from lathe.config.secrets import env_references, expand_references
from lathe.errors import UsageError

if TYPE_CHECKING:
    from lathe.config.loader import LoadedConfig
    from lathe.config.trust import ProjectSettings

MCP_JSON = ".mcp.json"
# Keys of the mcpServers shape that mean what lathe's own do (lathe's names included).
_PASSED_THROUGH = (
    "command", "args", "env", "cwd", "headers", "enabled", "startup_timeout_s",
    "tool_timeout_s", "include_tools", "exclude_tools",
)  # fmt: skip


@dataclass(frozen=True)
class ServerEntry:
    """One declared server: its settings, the file that declared it, and whether it may
    start in this run (`trusted`; always True for the user's own config)."""

    name: str
    config: McpServerConfig
    origin: str  # "user file PATH", "project file PATH", ".mcp.json PATH"
    from_project: bool
    trusted: bool = True

    @property
    def transport(self) -> str:
        if self.config.command is not None:
            return "stdio"
        return "streamable-http" if self.config.transport == "auto" else self.config.transport

    @property
    def fingerprint(self) -> str:
        """Identifies which server this is (its tool list is cached under it): what
        starts or reaches it, not its timeouts or tool filters."""
        import hashlib

        which = self.config.model_dump(
            include={"command", "args", "env", "cwd", "url", "headers", "transport"}
        )
        text = json.dumps([self.name, which], sort_keys=True)
        return hashlib.sha256(text.encode()).hexdigest()[:16]


@dataclass
class DeclaredServers:
    """Every declared server, and the one-line notices about those that may not start."""

    entries: list[ServerEntry] = field(default_factory=list)
    notices: list[str] = field(default_factory=list)

    def runnable(self) -> list[ServerEntry]:
        return [e for e in self.entries if e.trusted and e.config.enabled]

    def secrets(self, environ: Mapping[str, str] | None = None) -> list[str]:
        """The secrets the servers that may start take from the environment
        (`entry_secrets`): masked wherever lathe writes, like the model's key, should a
        server echo one or an error quote the URL. A server that is not started (not
        trusted, disabled) is given nothing, so nothing of its settings is masked."""
        found = {secret for entry in self.runnable() for secret in entry_secrets(entry, environ)}
        return sorted(found)


def entry_secrets(entry: ServerEntry, environ: Mapping[str, str] | None = None) -> list[str]:
    """The secrets one server's `env`, `headers` and `url` take from the environment
    (`${VAR}`): a value whose variable, or the env entry or header it fills, is named
    like a secret (`exec.env.holds_secret`: `API_TOKEN`, `SERVICE_AUTH`; a header
    `Authorization`, `Cookie`), or that looks like a credential itself
    (`looks_like_secret`) — one word, not a path nor a plain word, as for the
    environment (`exec.env.secret_values`) — and a credential of the url (its password,
    a `token=`). Its other values are settings (`NODE_ENV=development`): masking them replaced that
    word in every file the model read, and its edits of them failed. An argument counts
    when the option or `NAME=` it fills is named like a secret (`--token ${X}`), not
    otherwise: a `${HOME}` there would mask every path. Of a `Bearer <token>` value the
    token is masked (the whole holds a space, so it had been taken for a phrase).

    An `env`, header or argument value holding a credential once expanded
    (`config.secrets.find_credentials`: a connection string's password, filled from a
    variable or written in the file) gives that credential, and the whole value when it
    is one word, as the environment's own `DATABASE_URL` does, so that a short password
    goes too: `postgresql://app:${PGPW}@db/x` had reached the model in clear."""
    from lathe.config.secrets import auth_scheme, find_credentials, url_secrets
    from lathe.exec.env import maskable

    environ = os.environ if environ is None else environ
    config = entry.config
    found: set[str] = set()
    for value in secret_variables(entry, environ).values():
        scheme, token = auth_scheme(value)
        if maskable(value):
            found.add(value)
        elif scheme and maskable(token):
            found.add(token)
    for text in (*config.env.values(), *config.headers.values(), *config.args):
        value = _expanded_leniently(text, environ)
        credentials = [value[start:end] for start, end, _ in find_credentials(value)]
        found.update(c for c in credentials if maskable(c))
        if credentials and maskable(value):
            found.add(value)
    if config.url:
        found.update(url_secrets(_expanded_leniently(config.url, environ)))
    return sorted(found)


def secret_variables(entry: ServerEntry, environ: Mapping[str, str]) -> dict[str, str]:
    """The variables, with their values, that one server's `env`, `headers`, `url` and
    `args` take a secret from, as `entry_secrets` judges one (the url's own references
    all count), and those that fill a credential of a value (`_filling_credentials`:
    the password of `postgresql://app:${PGPW}@db/x`): what commands are never shown."""
    from lathe.config.secrets import looks_like_secret, secret_header
    from lathe.exec.env import holds_secret, is_secret_name

    config = entry.config
    filled: list[tuple[bool, str]] = [  # (the key it fills is named like a secret, text)
        *((is_secret_name(k), v) for k, v in config.env.items()),
        *((secret_header(k), v) for k, v in config.headers.items()),
        (True, config.url or ""),
        *((is_secret_name(_option_of(config.args, n)), a) for n, a in enumerate(config.args)),
    ]
    found: dict[str, str] = {}
    for secret_key, text in filled:
        credential = _filling_credentials(text, environ)
        for name in env_references(text):
            value = environ.get(name)
            if value and (
                secret_key
                or name in credential
                or holds_secret(name, value)
                or looks_like_secret(value)
            ):
                found[name] = value
    return found


def _filling_credentials(text: str, environ: Mapping[str, str]) -> set[str]:
    """The variables of `text` whose values make up, once it is expanded, part of a
    credential in it (`config.secrets.find_credentials`): PGPW of
    `postgresql://app:${PGPW}@db/x`, not PGUSER of `${PGUSER}:${PGPW}@`. A default
    fills none: it is written in the file."""
    from lathe.config.secrets import ENV_REF, find_credentials, reference_value

    pieces: list[str] = []
    spans: list[tuple[str, int, int]] = []  # (variable, where its value stands)
    last = 0
    for reference in ENV_REF.finditer(text):
        pieces.append(text[last : reference.start()])
        value = reference_value(reference, environ) or ""
        start = sum(map(len, pieces))
        if environ.get(reference.group(1)):
            spans.append((reference.group(1), start, start + len(value)))
        pieces.append(value)
        last = reference.end()
    if not spans:
        return set()
    pieces.append(text[last:])
    credentials = find_credentials("".join(pieces))
    return {
        name for name, start, end in spans if any(s < end and start < e for s, e, _ in credentials)
    }


def _option_of(args: list[str], index: int) -> str:
    """The name the argument at `index` gives a value to, as a variable's name
    (`--api-key=X`, `--api-key X`, `API_KEY=X`: API_KEY); "" when it gives none."""
    arg = args[index]
    named = re.match(r"^-{0,2}([A-Za-z][\w-]*)=", arg)
    if named:
        return named.group(1).replace("-", "_").upper()
    before = args[index - 1] if index else ""
    if before.startswith("-") and "=" not in before:
        return before.lstrip("-").replace("-", "_").upper()
    return ""


def declared_servers(
    loaded: LoadedConfig,
    workspace: Path,
    *,
    trust_now: bool = False,
    ask: Callable[[ProjectSettings], bool] | None = None,
    home: Path | None = None,
) -> DeclaredServers:
    """The workspace's servers with their trust decided: `trust_now` trusts (and
    records) every project file's servers, `ask` is asked once per untrusted file (an
    interactive face), otherwise an untrusted project server gets a notice saying how
    to trust it. Raises UsageError for a `.mcp.json` that cannot be read."""
    from lathe.config import trust
    from lathe.home import lathe_home

    home = home or lathe_home()
    config = loaded.config.mcp
    groups: dict[str, tuple[Path, list[tuple[str, Any]]]] = {}
    entries: dict[str, ServerEntry] = {}
    project_set = _project_set_servers(loaded)
    for name, server in config.servers.items():
        raw = project_set.get(name)
        if raw is None:
            origin = loaded.origins.get(("mcp", "servers", name, _first_key(server)))
            where = str(origin) if origin else "config"
            entries[name] = ServerEntry(name, server, where, from_project=False)
            continue
        file = Path(str(loaded.project_file)).resolve()
        groups.setdefault("config", (Path(f"{file}#mcp"), []))[1].append((name, raw))
        entries[name] = ServerEntry(name, server, f"project file {file}", from_project=True)
    notices: list[str] = []
    mcp_json = _find_mcp_json(workspace, loaded.project_root)
    try:
        from_json = _read_mcp_json(mcp_json) if mcp_json is not None else {}
    except UsageError as exc:  # a broken project file must not stop every run here
        notices.append(f"{exc}; its servers are not started")
        from_json = {}
    if mcp_json is not None:
        for name, raw in from_json.items():
            if name in entries:
                continue  # lathe's own config names it: that one wins
            try:
                server = _from_mcp_json(mcp_json, name, raw)
                # As other agents run them: from the folder of the file, wherever lathe runs.
                if not (server.cwd or "").startswith("${"):
                    where = mcp_json.parent / (server.cwd or ".")
                    server = server.model_copy(update={"cwd": str(where)})
            except UsageError as exc:  # one bad entry must not stop every run here
                notices.append(f"{exc}; that server is not started")
                continue
            groups.setdefault("json", (mcp_json, []))[1].append((name, raw))
            entries[name] = ServerEntry(name, server, f".mcp.json {mcp_json}", from_project=True)
    blanket = config.trust_project_servers and _set_outside_project(loaded)
    for file, servers in groups.values():
        settings = trust.ProjectSettings(
            file, tuple((f"mcp.servers.{name}", raw) for name, raw in servers)
        )
        allowed = blanket or trust.is_trusted(home, settings)
        if not allowed:
            allowed = trust_now or _asked(ask, home, settings)
            if allowed:
                trust.trust(home, settings)
        if allowed:
            continue
        names = [name for name, _ in servers]
        for name in names:
            entries[name] = _untrusted(entries[name])
        shown = str(file).removesuffix("#mcp")
        notices.append(
            f"MCP server{'s' if len(names) > 1 else ''} {', '.join(names)} from {shown} "
            "not started: not trusted yet; review the file, then pass --trust-project-mcp "
            "(remembered until it changes)"
        )
    return DeclaredServers(list(entries.values()), notices)


def _asked(ask: Callable[[Any], bool] | None, home: Path, settings: Any) -> bool:
    """The person's answer, asked once per content of the settings: a "no" is
    remembered like a "yes", and asked again only when the file changes them."""
    from lathe.config import trust

    if ask is None or trust.is_declined(home, settings):
        return False
    if ask(settings):
        return True
    trust.decline(home, settings)
    return False


def files_they_run(entries: list[ServerEntry], workspace: Path) -> tuple[str, ...]:
    """The workspace files the stdio servers' command and arguments name (a script, a
    config it loads), as patterns anchored at the workspace: protected, so that code a
    server runs on the host changes only with the user's approval (the model had edited
    a trusted server's script, and its next call ran the edit outside the sandbox)."""
    from lathe.policy.rules import files_named

    found: dict[str, None] = {}  # in the order named, once each
    for entry in entries:
        config = entry.config
        if config.command is None:
            continue
        base = workspace / config.cwd if config.cwd else workspace
        words = (config.command, *config.args)
        found |= dict.fromkeys(files_named(words, base, workspace))
    return tuple(found)


def _expanded_leniently(value: str, environ: Mapping[str, str]) -> str:
    """`value` expanded as far as the environment allows (a missing variable: empty)."""
    return expand_references(value, environ, lambda _name: "")


def expanded(value: str, environ: Mapping[str, str] | None = None, *, server: str) -> str:
    """`value` with each `${VAR}` replaced from the environment, and each
    `${VAR:-default}` too, by the default when VAR is unset or empty (as the shell and
    Claude Code's `.mcp.json` do); a variable that is not set and has no default is an
    error naming the server and the variable."""
    environ = os.environ if environ is None else environ

    def missing(name: str) -> str:
        raise UsageError(
            f"MCP server {server}: ${{{name}}} is not set in the environment; export it"
        )

    return expand_references(value, environ, missing)


def _untrusted(entry: ServerEntry) -> ServerEntry:
    from dataclasses import replace

    return replace(entry, trusted=False)


def _first_key(server: McpServerConfig) -> str:
    return "command" if server.command is not None else "url"


def _project_set_servers(loaded: LoadedConfig) -> dict[str, dict[str, Any]]:
    """What the project file sets under each `[mcp.servers.NAME]`, as it sets it."""
    found: dict[str, dict[str, Any]] = {}
    for path, value in loaded.project_values:
        if len(path) >= 3 and path[:2] == ("mcp", "servers"):
            found.setdefault(path[2], {})[".".join(path[3:])] = value
    return found


def _set_outside_project(loaded: LoadedConfig) -> bool:
    """Whether mcp.trust_project_servers was set by the user, not by a project file."""
    origin = loaded.origins.get(("mcp", "trust_project_servers"))
    return origin is not None and origin.layer != "project"


def _find_mcp_json(workspace: Path, project_root: Path) -> Path | None:
    """The workspace's `.mcp.json`, else the project root's (the config found it)."""
    for folder in dict.fromkeys([workspace.resolve(), project_root]):
        candidate = folder / MCP_JSON
        if candidate.is_file():
            return candidate
    return None


def _read_mcp_json(path: Path) -> dict[str, Any]:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise UsageError(f"{path}: not valid JSON ({exc}); fix or remove it") from None
    servers = data.get("mcpServers", {}) if isinstance(data, dict) else None
    if not isinstance(servers, dict):
        raise UsageError(f"{path}: mcpServers must be an object of servers by name")
    return servers


def _from_mcp_json(path: Path, name: str, raw: Any) -> McpServerConfig:
    """The server `name` of a `.mcp.json`; a UsageError naming the entry and the problem,
    never the value (the file may hold a literal token)."""
    from pydantic import ValidationError

    from lathe.config.schema import valid_server_name

    if not valid_server_name(name):
        raise UsageError(
            f"{path}: mcpServers.{name!r}: a server name must be letters, digits, _ and - "
            "(at most 32, no double _), since it becomes part of each tool's name"
        )
    try:
        return server_config(raw)
    except ValidationError as exc:
        first = exc.errors(include_input=False, include_url=False)[0]
        where = ".".join(str(part) for part in first["loc"])
        problem = first["msg"].removeprefix("Value error, ")
        raise UsageError(
            f"{path}: mcpServers.{name}{'.' + where if where else ''}: {problem}"
        ) from None
    except (ValueError, TypeError) as exc:
        raise UsageError(f"{path}: mcpServers.{name}: {exc}") from None


def server_config(raw: Any) -> McpServerConfig:
    """A server in the `mcpServers` shape other agents write (`type` "stdio", "http",
    "streamable-http" or "sse"; Gemini's `httpUrl`) as lathe's settings."""
    if not isinstance(raw, dict):
        raise ValueError("expected an object with command or url")
    kind = raw.get("type") or raw.get("transport")
    url = raw.get("url") or raw.get("httpUrl") or raw.get("serverUrl")
    fields: dict[str, Any] = {key: raw[key] for key in _PASSED_THROUGH if key in raw}
    if url is not None:
        fields["url"] = url
        if kind == "sse":
            fields["transport"] = "sse"
        elif kind in ("http", "streamable-http", "streamableHttp") or "httpUrl" in raw:
            fields["transport"] = "streamable-http"
    if "timeout" in raw and isinstance(raw["timeout"], int | float) and raw["timeout"] > 0:
        fields["tool_timeout_s"] = raw["timeout"] / 1000  # Gemini's, in milliseconds
    if raw.get("disabled") is True:
        fields["enabled"] = False
    return McpServerConfig.model_validate(fields)
