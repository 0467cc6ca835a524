"""Reading another agent's MCP servers (Codex `config.toml` `[mcp_servers]`, Gemini
`settings.json` `mcpServers`) and appending them to a lathe config file as
`[mcp.servers.NAME]` tables.

A value that looks like a secret (`looks_like_secret`) is never written: an `env` entry
becomes `${ITS_NAME}`, a header `${SERVERNAME_HEADER}`, a `url`'s password and secret
query values `${SERVERNAME_URL_PASSWORD}` and `${SERVERNAME_PARAMETER}`, and the caller
tells the user which variables to export. Existing text and comments of the target file are kept; a
server the file already declares is skipped, not overwritten.
"""

from __future__ import annotations

import json
import re
import tomllib
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from lathe.config.render import toml_value
from lathe.config.secrets import holds_literal_secret, url_credentials
from lathe.errors import UsageError
from lathe.mcptools.servers import server_config

_DOLLAR_NAME = re.compile(r"\$([A-Za-z_][A-Za-z0-9_]*)\b")


def read_foreign(path: Path) -> tuple[dict[str, dict[str, Any]], list[tuple[str, str]]]:
    """The servers in `path` as lathe settings (only the keys that differ from the
    defaults), and the (where, VARIABLE) of each secret replaced by a reference."""
    try:
        text = path.read_text(encoding="utf-8")
        if path.suffix == ".toml":
            raw = tomllib.loads(text).get("mcp_servers", {})
            converted = {name: _from_codex(server) for name, server in raw.items()}
        else:
            data = json.loads(text)
            raw = data.get("mcpServers", {}) if isinstance(data, dict) else {}
            converted = {name: _from_gemini(server) for name, server in raw.items()}
    except (OSError, ValueError, AttributeError) as exc:
        raise UsageError(f"cannot read MCP servers from {path}: {exc}") from None
    replaced: list[tuple[str, str]] = []
    servers: dict[str, dict[str, Any]] = {}
    for name, fields in converted.items():
        safe = _lathe_name(path, name)
        if safe in servers:
            raise UsageError(
                f"{path}: two servers become {safe!r} in lathe's names ({name!r} is one); "
                "rename one of them first"
            )
        named: dict[str, str] = {}  # a secret's value -> the variable that now holds it
        for key in ("env", "headers"):
            for item, value in list(fields.get(key, {}).items()):
                value = _DOLLAR_NAME.sub(r"${\1}", str(value))
                if holds_literal_secret(value):
                    variable = item if key == "env" else _variable(f"{safe}_{item}")
                    named.setdefault(value, variable)
                    value = f"${{{variable}}}"
                    replaced.append((f"mcp.servers.{safe}.{key}.{item}", variable))
                fields[key][item] = value
        if fields.get("args"):
            fields["args"] = _args_without_secrets(fields["args"], safe, named, replaced)
        if fields.get("url"):
            fields["url"] = _url_without_secrets(fields["url"], safe, replaced)
        try:
            checked = server_config(fields)
        except ValidationError as exc:
            first = exc.errors(include_input=False, include_url=False)[0]
            problem = first["msg"].removeprefix("Value error, ")
            raise UsageError(f"{path}: server {name}: {problem}") from None
        except ValueError as exc:
            raise UsageError(f"{path}: server {name}: {exc}") from None
        servers[safe] = checked.model_dump(exclude_defaults=True)
    return servers, replaced


def _args_without_secrets(
    args: list[Any], safe: str, named: dict[str, str], replaced: list[tuple[str, str]]
) -> list[str]:
    """`args` with each credential (a whole argument, or the value of `--opt=VALUE`) put
    in a variable: the one an env entry already gives it, else one named after the
    server and the argument's place."""
    cleaned: list[str] = []
    for index, arg in enumerate(str(a) for a in args):
        option, equals, value = arg.rpartition("=") if arg.startswith("-") else ("", "", arg)
        if not holds_literal_secret(value):
            cleaned.append(arg)
            continue
        variable = named.get(value)
        if variable is None:
            variable = named[value] = _variable(f"{safe}_arg_{index}")
            replaced.append((f"mcp.servers.{safe}.args[{index}]", variable))
        cleaned.append(f"{option}{equals}${{{variable}}}")
    return cleaned


def _lathe_name(path: Path, name: str) -> str:
    """`name` as lathe's config takes it: letters, digits, `_` and `-`, at most 32,
    never `__` (it becomes part of each tool's name)."""
    from lathe.config.schema import valid_server_name

    safe = re.sub(r"_{2,}", "_", re.sub(r"[^A-Za-z0-9_-]", "-", name)).strip("_-")[:32]
    if not valid_server_name(safe):
        raise UsageError(
            f"{path}: server {name!r} has no name lathe can use (letters, digits, _ and -); "
            "rename it first"
        )
    return safe


def append_servers(target: Path, servers: dict[str, dict[str, Any]]) -> tuple[list[str], list[str]]:
    """Append each server to `target` (created when missing); (written, skipped)."""
    existing = target.read_text(encoding="utf-8") if target.is_file() else ""
    try:
        declared = tomllib.loads(existing).get("mcp", {}).get("servers", {})
    except tomllib.TOMLDecodeError as exc:
        raise UsageError(f"{target}: invalid TOML ({exc}); fix it first") from None
    written, skipped, blocks = [], [], []
    for name, fields in servers.items():
        if name in declared:
            skipped.append(name)
            continue
        lines = [f"[mcp.servers.{name}]"]
        lines += [f"{key} = {toml_value(value)}" for key, value in fields.items()]
        blocks.append("\n".join(lines))
        written.append(name)
    if blocks:
        from lathe.atomic_write import write_atomic

        joined = existing.rstrip("\n") + ("\n\n" if existing.strip() else "")
        target.parent.mkdir(parents=True, exist_ok=True)
        write_atomic(target, (joined + "\n\n".join(blocks) + "\n").encode())
    return written, skipped


def _from_codex(server: dict[str, Any]) -> dict[str, Any]:
    fields = {k: server[k] for k in ("command", "args", "env", "cwd", "url") if k in server}
    headers = dict(server.get("http_headers", {}))
    headers |= {h: f"${{{var}}}" for h, var in server.get("env_http_headers", {}).items()}
    if server.get("bearer_token_env_var"):
        headers["Authorization"] = f"Bearer ${{{server['bearer_token_env_var']}}}"
    if headers:
        fields["headers"] = headers
    if fields.get("url"):
        fields["type"] = "http"  # Codex speaks streamable HTTP to a url
    renames = {
        "startup_timeout_sec": "startup_timeout_s",
        "tool_timeout_sec": "tool_timeout_s",
        "enabled_tools": "include_tools",
        "disabled_tools": "exclude_tools",
    }
    fields |= {ours: server[theirs] for theirs, ours in renames.items() if theirs in server}
    if server.get("startup_timeout_ms"):
        fields["startup_timeout_s"] = server["startup_timeout_ms"] / 1000
    if server.get("enabled") is False:
        fields["disabled"] = True
    return fields


def _from_gemini(server: dict[str, Any]) -> dict[str, Any]:
    fields = dict(server)
    for theirs, ours in (("includeTools", "include_tools"), ("excludeTools", "exclude_tools")):
        if theirs in fields:
            fields[ours] = fields.pop(theirs)
    for ignored in ("trust", "description", "oauth", "authProviderType"):
        fields.pop(ignored, None)
    return fields


def _url_without_secrets(url: str, server: str, replaced: list[tuple[str, str]]) -> str:
    """`url` with its password and secret query values as `${SERVER_...}` references,
    each added to `replaced`."""
    from urllib.parse import quote_plus

    for what, value in url_credentials(url):
        variable = _variable(f"{server}_url_password" if what == "password" else f"{server}_{what}")
        if what == "password":
            url = url.replace(f":{value}@", f":${{{variable}}}@", 1)
        else:  # as it is written in the query, encoded or not
            for spelled in dict.fromkeys((value, quote_plus(value))):
                url = url.replace(f"={spelled}", f"=${{{variable}}}", 1)
        replaced.append((f"mcp.servers.{server}.url", variable))
    return url


def _variable(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9_]", "_", text).upper()
