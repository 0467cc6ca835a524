"""Reading another agent's MCP servers (Codex `config.toml` `[mcp_servers]`, Gemini
`settings.json` `mcpServers`) and appending them to a lathe config file as
`[mcp.servers.NAME]` tables.

A secret is never written: a value that looks like one (`looks_like_secret`), and
whatever a name says is one, however short — an `env` entry named like a secret
variable (`DB_PASSWORD`), a credential header (`Authorization`, `X-API-Key`), an
argument after or in a secret-named option (`--token X`, `--token=X`), and the password,
secret query values and key-like path segments (`/mcp/sk-ak-.../sse`) of a URL, in `url`
or in an argument. A name that says which
setting about a secret it is (`--token-url`, `PASSWORD_STORE`, `SSL_KEY_FILE`,
`X-Auth-Scheme`) or holds no value (`--no-auth`) names none, nor is a path, a URL
without credentials or a plain word one. An `env` entry becomes
`${ITS_NAME}`, a header `${SERVERNAME_HEADER}` (after its `Bearer `), an argument
`${SERVERNAME_ARG_N}`, a `url`'s password, path key and secret query values
`${SERVERNAME_URL_PASSWORD}`, `${SERVERNAME_URL_KEY}` and `${SERVERNAME_PARAMETER}` (an
argument's `${SERVERNAME_ARG_N_PASSWORD}`...), and the caller tells the user which variables to
export. Existing text and comments of the target file are kept; a
server the file already declares is skipped, not overwritten, and a file its servers
cannot be appended to (an inline `mcp = {...}`) is refused, left as it was. A field of
the wrong shape (`env = "FOO=bar"`, `args = "--flag"`, `"timeout": "soon"`) is refused,
naming the server and the field, never read as it would have been.
"""

from __future__ import annotations

import json
import re
import tomllib
from collections.abc import Callable
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from lathe.config.render import toml_value
from lathe.config.secrets import (
    ABOUT_A_CREDENTIAL,
    ENV_NAME,
    ENV_REF,
    auth_scheme,
    holds_literal_credential,
    holds_literal_secret,
    looks_like_secret,
    secret_header,
    url_credentials,
)
from lathe.errors import UsageError
from lathe.exec.env import is_secret_name
from lathe.mcptools.servers import server_config

_DOLLAR_NAME = re.compile(r"\$([A-Za-z_][A-Za-z0-9_]*)\b")
# A URL with a user before its host: https://KEY@o1.ingest.example/2 (a DSN's key).
_USERINFO = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*://[^/@\s]+@")
_HEADER_ARG = re.compile(r"^([A-Za-z][A-Za-z0-9-]*)(:\s*)(.+)$")
# Words a secret's word is only part of (TOKENIZER holds TOKEN, KEYCLOAK KEY).
_LONGER_WORD = re.compile(r"TOKENIZERS?|KEYCLOAK|KEYBOARD|KEYSPACE|KEYWORDS?", re.IGNORECASE)
# An option that takes no value, whatever its name: --no-auth, --disable-token-check.
_SWITCH = re.compile(r"^-+(no|disable|without|skip)[-_]", re.IGNORECASE)
# A relative path (certs/server.key); a token never has a folder made of name characters.
_RELATIVE_PATH = re.compile(r"^([\w.-]+/)+[\w.-]+/?$")


def read_foreign(path: Path) -> tuple[dict[str, dict[str, Any]], list[tuple[str, str]]]:
    """The servers in `path` as lathe settings (only the keys that differ from the
    defaults), and the (where, VARIABLE) of each secret replaced by a reference."""
    codex = path.suffix == ".toml"
    try:
        text = path.read_text(encoding="utf-8")
        if codex:
            raw = tomllib.loads(text).get("mcp_servers", {})
        else:
            data = json.loads(text)
            raw = data.get("mcpServers", {}) if isinstance(data, dict) else {}
    except (OSError, ValueError) as exc:
        raise UsageError(f"cannot read MCP servers from {path}: {exc}") from None
    # Each field's shape is checked before it is read: `env = "FOO=bar"` had ended in a
    # traceback, and `args = "--flag"` was written as ["-", "-", "f", "l", "a", "g"].
    table = "a table" if codex else "an object"
    where = "mcp_servers" if codex else "mcpServers"
    if not isinstance(raw, dict):
        raise UsageError(
            f"{path}: {where} must be {table} of servers, not {_kind(raw)}; "
            "fix it there and import again"
        )
    shapes = _CODEX_SHAPES if codex else _GEMINI_SHAPES
    converted = {}
    for name, server in raw.items():
        _check_shapes(path, name, server, shapes, table)
        converted[name] = _from_codex(server) if codex else _from_gemini(server)
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
                value = _DOLLAR_NAME.sub(r"${\1}", value)
                scheme, secret = auth_scheme(value) if key == "headers" else ("", value)
                by_name = _secret_name(item, secret_header if key == "headers" else None)
                # A credential header takes references alone, as the config check wants:
                # `X-Api-Key: changeme` was left as written, then refused.
                literal = key == "headers" and holds_literal_credential(item, value)
                if literal or holds_literal_secret(value) or (by_name and _literal(secret, item)):
                    variable = item if key == "env" else _variable(f"{safe}_{item}")
                    named.setdefault(secret, variable)
                    value = f"{scheme}${{{variable}}}"
                    replaced.append((f"mcp.servers.{safe}.{key}.{item}", variable))
                fields[key][item] = value
        if fields.get("args"):
            fields["args"] = _args_without_secrets(fields["args"], safe, named, replaced)
        if fields.get("url"):
            where = f"mcp.servers.{safe}.url"
            fields["url"] = _url_without_secrets(fields["url"], where, safe, replaced)
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


def _check_shapes(path: Path, name: str, server: Any, shapes: dict[str, str], table: str) -> None:
    """Refuse, naming the server and the field, a server that is no `table` ("a table"
    in TOML, "an object" in JSON) or a field whose value is not of the shape `shapes`
    gives it (a key of `_SHAPES`); fields lathe does not take are not looked at."""
    if not isinstance(server, dict):
        raise UsageError(
            f"{path}: server {name} must be {table}, not {_kind(server, table)}; "
            "fix it there and import again"
        )
    for field, shape in shapes.items():
        what, fits = _SHAPES[shape]
        if field in server and not fits(server[field]):
            raise UsageError(
                f"{path}: server {name}: {field} must be {what.replace('a table', table)}, "
                f"not {_kind(server[field], table)}; fix it there and import again"
            )


def _kind(value: Any, table: str = "a table") -> str:
    """What a value read from JSON or TOML is, in those files' words (`table`: "a
    table" or "an object"); a list or a table by its first item that is no string."""
    match value:
        case bool():
            return "a boolean"
        case int() | float():
            return "a number"
        case str():
            return "a string"
        case None:
            return "null"
        case list() | dict():
            items = value if isinstance(value, list) else value.values()
            odd = next((item for item in items if not isinstance(item, str)), None)
            kind = "a list" if isinstance(value, list) else table
            return kind if odd is None else f"{kind} holding {_kind(odd, table)}"
    return type(value).__name__


def _strings(value: Any) -> bool:
    items = value if isinstance(value, list) else value.values() if isinstance(value, dict) else ()
    return all(isinstance(item, str) for item in items)


def _positive(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool) and value > 0


# A shape: how a refusal says it, and whether a value has it.
_SHAPES: dict[str, tuple[str, Callable[[Any], bool]]] = {
    "string": ("a string", lambda value: isinstance(value, str)),
    "strings": ("a list of strings", lambda value: isinstance(value, list) and _strings(value)),
    "map": ("a table of strings", lambda value: isinstance(value, dict) and _strings(value)),
    "seconds": ("a positive number of seconds", _positive),
    "ms": ("a positive number of milliseconds", _positive),
    "boolean": ("true or false", lambda value: isinstance(value, bool)),
}
_CODEX_SHAPES = {
    "command": "string", "args": "strings", "env": "map", "cwd": "string", "url": "string",
    "http_headers": "map", "env_http_headers": "map", "bearer_token_env_var": "string",
    "startup_timeout_sec": "seconds", "tool_timeout_sec": "seconds", "startup_timeout_ms": "ms",
    "enabled": "boolean", "enabled_tools": "strings", "disabled_tools": "strings",
}  # fmt: skip
_GEMINI_SHAPES = {
    "command": "string", "args": "strings", "env": "map", "cwd": "string", "url": "string",
    "httpUrl": "string", "type": "string", "headers": "map", "timeout": "ms",
    "includeTools": "strings", "excludeTools": "strings",
}  # fmt: skip


def _args_without_secrets(
    args: list[str], safe: str, named: dict[str, str], replaced: list[tuple[str, str]]
) -> list[str]:
    """`args` with each credential put in a variable: an argument, or the value of
    `--opt=VALUE`, `NAME=VALUE` or `Header: VALUE`, that looks like one or that a
    secret's name points at (`--token X`, `--api-key=X`, `DB_PASSWORD=X`,
    `Authorization: Bearer X`), and a URL's password and secret query values. A value
    an env entry already gives keeps that entry's variable; else the variable is named
    after the server and the argument's place."""
    cleaned: list[str] = []
    previous = ""
    for index, arg in enumerate(args):
        prefix, value, by_name = _split(arg)
        # `--token X`, but neither `--no-auth PACKAGE` nor `--token --verbose`
        by_name = by_name or (
            "=" not in previous and _secret_option(previous) and not arg.startswith("-")
        )
        where = f"mcp.servers.{safe}.args[{index}]"
        if holds_literal_secret(value) or (by_name and _literal(value, prefix or previous)):
            variable = named.get(value)
            if variable is None:
                variable = named[value] = _variable(f"{safe}_arg_{index}")
                replaced.append((where, variable))
            cleaned.append(f"{prefix}${{{variable}}}")
        elif "://" in value:
            stem = f"{safe}_arg_{index}"
            url = _url_without_secrets(value, where, stem, replaced, password_as=stem)
            cleaned.append(f"{prefix}{url}")
        else:
            cleaned.append(arg)
        previous = arg
    return cleaned


def _split(arg: str) -> tuple[str, str, bool]:
    """(what stays, the value, whether its name says it is a secret) of one argument:
    `--opt=VALUE`, `NAME=VALUE` (`docker -e`), `Header: [Bearer ]VALUE` (`mcp-remote
    --header`), else the whole argument."""
    if arg.startswith("-") and "=" in arg:
        option, _, value = arg.partition("=")
        return f"{option}=", value, _secret_option(option)
    name, equals, value = arg.partition("=")
    if equals and ENV_NAME.match(name):
        return f"{name}=", value, _secret_name(name)
    header = _HEADER_ARG.match(arg)
    if header and not header.group(3).startswith("//"):
        scheme, value = auth_scheme(header.group(3))
        named = _secret_name(header.group(1), secret_header)
        return f"{header.group(1)}{header.group(2)}{scheme}", value, named
    return "", arg, False


def _secret_option(option: str) -> bool:
    """`--token`, `--api-key`, `-password`: an option whose value is a secret (not
    `--no-auth`, which takes none, nor `--token-url`)."""
    return (
        option.startswith("-")
        and not _SWITCH.match(option)
        and _secret_name(option.lstrip("-").replace("-", "_"))
    )


def _secret_name(name: str, judge: Callable[[str], bool] | None = None) -> bool:
    """Whether a variable's, option's or header's (`judge`: `secret_header`) name says
    its value is a secret: named like one, and not a setting about one (`TOKEN_URL`,
    `PASSWORD_STORE`, `SSL_KEY_FILE`, `X-Auth-Scheme`) nor a longer word (`TOKENIZER`)."""
    # A setting about a secret (`ABOUT_A_CREDENTIAL`), but a webhook's URL is one.
    if ABOUT_A_CREDENTIAL.search(name) and "WEBHOOK" not in name.upper():
        return False
    return (judge or is_secret_name)(_LONGER_WORD.sub("", name))


def _literal(value: str, name: str = "") -> bool:
    """Whether a value a secret's name (`name`, or the text before the value) points at
    holds one: not only references, nor a path (`--key-file ~/.ssh/id`,
    `certs/server.key`), a URL without credentials (but a webhook's), a flag, a number,
    a yes/no or a plain word (`basic`); nor is a reference, but its default may be
    (`${PW:-hunter2}`)."""
    if any(_literal(match.group(2) or "", name) for match in ENV_REF.finditer(value)):
        return True
    value = ENV_REF.sub("", value).strip()
    if not value or value.startswith(("/", "~", ".", "-")) or value.isdigit() or value.isalpha():
        return False
    if "://" in value and "WEBHOOK" not in name.upper():
        return bool(_USERINFO.match(value) or url_credentials(value))
    if _RELATIVE_PATH.match(value) and not looks_like_secret(value):
        return False
    return value.lower() not in ("true", "false", "yes", "no", "on", "off", "none", "null")


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
    """Append each server to `target` (created when missing); (written, skipped). The
    file is written only when what it becomes still reads, holding each server as
    written: tables appended after an inline `mcp = {...}` (or `servers = {...}`)
    declare those keys twice, which had left the file unreadable by every command."""
    # As the config loader reads it: a leading byte order mark is none of the TOML.
    existing = target.read_text(encoding="utf-8-sig") if target.is_file() else ""
    try:
        mcp = tomllib.loads(existing).get("mcp", {})
    except tomllib.TOMLDecodeError as exc:
        raise UsageError(f"{target}: invalid TOML ({exc}); fix it first") from None
    declared = mcp.get("servers", {}) if isinstance(mcp, dict) else None
    if not isinstance(declared, dict):
        key = "mcp.servers" if isinstance(mcp, dict) else "mcp"
        raise UsageError(f"{target}: {key} must be a table; fix it first")
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

        added = "\n\n".join(blocks) + "\n"
        text = existing.rstrip("\n") + ("\n\n" if existing.strip() else "") + added
        try:
            wanted = tomllib.loads(added)["mcp"]["servers"]
            kept = tomllib.loads(text)["mcp"]["servers"]
            whole = all(kept[name] == wanted[name] for name in written)
        except (tomllib.TOMLDecodeError, KeyError, TypeError):
            whole = False
        if not whole:
            raise UsageError(
                f"{target}: its mcp settings are an inline table (mcp = {{...}} or "
                "servers = {...}), to which no [mcp.servers.NAME] table can be added; "
                "write them as [mcp] and [mcp.servers.NAME] tables and import again "
                "(nothing was written)"
            )
        target.parent.mkdir(parents=True, exist_ok=True)
        write_atomic(target, text.encode())
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


def _url_without_secrets(
    url: str,
    where: str,
    stem: str,
    replaced: list[tuple[str, str]],
    *,
    password_as: str | None = None,
) -> str:
    """`url` with its password, the segments of its path that look like a key and its
    secret query values as references (`${STEM_URL_PASSWORD}` and `${STEM_URL_KEY}`, or
    `${PASSWORD_AS_PASSWORD}` and `${PASSWORD_AS_KEY}`; `${STEM_PARAMETER}`), each added
    to `replaced` under `where`. The rest stays as it is written."""
    from urllib.parse import unquote_plus, urlsplit

    found = url_credentials(url)
    own = password_as or stem + "_url"
    if found and urlsplit(url).password:  # then first, as ("password", it)
        variable = _variable(f"{own}_password")
        url = url.replace(f":{found.pop(0)[1]}@", f":${{{variable}}}@", 1)
        replaced.append((where, variable))
    keys = list(dict.fromkeys(value for what, value in found if what == "path"))
    if keys:
        start = url.find("/", url.find("//") + 2)  # the path, after the host
        end = min((i for i in (url.find("?"), url.find("#")) if i != -1), default=len(url))
        segments = url[start:end].split("/")
        for number, key in enumerate(keys, 1):
            variable = _variable(f"{own}_key{'_' + str(number) if number > 1 else ''}")
            segments = [f"${{{variable}}}" if s == key else s for s in segments]
            replaced.append((where, variable))
        url = url[:start] + "/".join(segments) + url[end:]
    secret = {what for what, _ in found if what != "path"}
    head, mark, tail = url.partition("?")
    query, hash_, fragment = tail.partition("#")
    pieces = query.split("&")
    for index, piece in enumerate(pieces):
        # by the parameter's name: its value may also be part of another's
        key, equals, value = piece.partition("=")
        if equals and value and unquote_plus(key) in secret:
            variable = _variable(f"{stem}_{unquote_plus(key)}")
            pieces[index] = f"{key}=${{{variable}}}"
            replaced.append((where, variable))
    return head + mark + "&".join(pieces) + hash_ + fragment


def _variable(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9_]", "_", text).upper()
