"""Recognising and masking API keys, so config never stores one and output never shows one."""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterator, Mapping
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from urllib.parse import SplitResult

# Vendor key prefixes seen in the wild; a value starting with one is a key, not a name.
# An AWS key id is one only whole (its prefix begins names: ASIA_OPENAI_API_KEY).
_KEY_PREFIX = re.compile(
    r"^(sk-ant-|sk-proj-|sk-|sk_|pk_|rk_|gsk_|xai-|AIza|gh[pousr]_|github_pat_|hf_|glpat-"
    r"|xox[abeprs]-|npm_|(AKIA|ASIA)(?=[A-Z0-9]{16}\b))"
)
_TOKEN_CHARS = re.compile(r"^[A-Za-z0-9_\-.+/=]+$")
ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
# A file path: rooted (/, ~/, ./, ../) and made of named folders, with none of the `+` and
# `=` of base64; a token is never written so.
_PATH = re.compile(r"^(~|\.{1,2})?/([\w.-]+/)*[\w.-]+/?$")
# `${VAR}` in a setting: the value is taken from the environment when used, never stored.
# `${VAR:-default}` (as in `.mcp.json`, after the shell): the default when VAR is unset or
# empty. Group 1 is the name, group 2 the default (None without one).
ENV_REF = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)(?::-([^}]*))?\}")


def reference_value(reference: re.Match[str], environ: Mapping[str, str]) -> str | None:
    """What one `ENV_REF` match stands for: the variable, else its default (when it is
    unset or empty), else None."""
    name, default = reference.group(1), reference.group(2)
    if default is not None and not environ.get(name):
        return default
    return environ.get(name)


def expand_references(
    value: str,
    environ: Mapping[str, str],
    missing: Callable[[str], str],
    variables: list[str] | None = None,
) -> str:
    """`value` with each `ENV_REF` as `reference_value` reads it; a variable that is not
    set and has no default is `missing(name)` (which may raise). The values taken from
    variables, not defaults, go to `variables`: those are secrets."""

    def one(match: re.Match[str]) -> str:
        found = reference_value(match, environ)
        if found is None:
            return missing(match.group(1))
        if variables is not None and environ.get(match.group(1)):
            variables.append(found)
        return found

    return ENV_REF.sub(one, value)


_AUTH_SCHEMES = frozenset({"bearer", "basic", "token", "bot"})


def auth_scheme(value: str) -> tuple[str, str]:
    """("Bearer ", TOKEN) of an Authorization-style value, else ("", value): the token
    is the secret, the scheme a word anyone may read."""
    scheme, space, rest = value.partition(" ")
    if space and rest.strip() and scheme.lower() in _AUTH_SCHEMES:
        return f"{scheme} ", rest.strip()
    return "", value


def env_references(text: str) -> list[str]:
    """The variables `text` takes values from (`${VAR}`, `${VAR:-default}`)."""
    return [match.group(1) for match in ENV_REF.finditer(text)]


def holds_literal_secret(value: str) -> bool:
    """Whether `value`, its `${VAR}` references left out, still looks like a credential,
    or one of their defaults does (`${TOKEN:-ghp_...}` stores the key all the same)."""
    defaults = (match.group(2) or "" for match in ENV_REF.finditer(value))
    return any(looks_like_secret(text) for text in (ENV_REF.sub("", value), *defaults))


def refuse_literal_secrets(values: dict[str, str], what: str = "") -> dict[str, str]:
    """`values` (a config table of headers or variables) unchanged, or a ValueError for the
    first entry holding a literal secret; `what` goes before its name ("header")."""
    for name, value in values.items():
        if holds_literal_secret(value):
            raise ValueError(
                f"{what + ' ' if what else ''}{name!r} looks like it holds a secret; secrets "
                'are never stored in config files. Write "${VAR}" (e.g. "Bearer ${MY_TOKEN}") '
                "and export VAR"
            )
    return values


def refuse_literal_headers(headers: dict[str, str]) -> dict[str, str]:
    """`headers` (a config table of HTTP headers) unchanged, or a ValueError for the first
    holding a literal secret: a value that looks like one (`refuse_literal_secrets`), or
    any literal where the header's name says its value is a credential
    (`credential_header`), however short: that part may be `${VAR}` references only
    (`Bearer ${TOKEN}`, a cookie's `session=${SESSION}`), and none with a default. The
    error names the header, never its value."""
    for name, value in headers.items():
        refuse_literal_secrets({name: value}, "header")
        if holds_literal_credential(name, value):
            example = "session=${MY_SESSION}" if _COOKIE.search(name) else "Bearer ${MY_TOKEN}"
            raise ValueError(
                f"header {name!r} carries a credential, so its value is never stored in config "
                f'files. Write "${{VAR}}" in its place (e.g. "{example}") and export VAR'
            )
    return headers


def holds_literal_credential(name: str, value: str) -> bool:
    """Whether a header of this name holds its credential literally: the header's name
    says its value is one (`credential_header`) and that part of it is not `${VAR}`
    references alone (`changeme` and `session=abc` are; `Bearer ${TOKEN}` is not)."""
    return credential_header(name) and not all(
        map(_only_references, _credential_parts(name, value))
    )


# A name for a setting about a credential, not the credential: TOKEN_URL, KEYCLOAK_URL,
# PASSWORD_STORE, SSL_KEY_FILE, X-Auth-Scheme, X-Token-Type.
ABOUT_A_CREDENTIAL = re.compile(
    r"(URL|URI|ENDPOINT|HOST|PORT|FILE|PATH|DIR|STORE|SCHEME|TYPE|MODE|METHOD|PROVIDER)$",
    re.IGNORECASE,
)
_COOKIE = re.compile(r"cookie", re.IGNORECASE)


# The last word of a header naming who or what a credential is for, not the credential:
# X-Auth-Email, X-Auth-User, X-Auth-Project-Id, X-Signature-Version, X-Auth-Region.
_ABOUT_WORDS = frozenset({"email", "user", "username", "id", "version", "region"})


def credential_header(name: str) -> bool:
    """Whether the value of a header of this name is a credential (`secret_header`:
    `Authorization`, `X-Api-Key`, `Cookie`), not a setting about one (`X-Auth-Scheme`,
    `X-Auth-Email`, `X-Auth-Project-Id`)."""
    parts = _NAME_PART.findall(name)
    about = ABOUT_A_CREDENTIAL.search(name) or (parts and parts[-1].lower() in _ABOUT_WORDS)
    return secret_header(name) and not about


# RFC 7235's credentials: an auth-scheme (a token: `Bearer`, `Key`, `DeepL-Auth-Key`),
# spaces, then a token68 (`${TOKEN}`) or auth-params (`token=${T}, realm="x"`).
_TOKEN = r"[!#$%&'*+\-.^_`|~0-9A-Za-z]+"
_SCHEME = re.compile(rf"{_TOKEN} +(?=\S)")
_AUTH_PARAM = re.compile(rf"\s*{_TOKEN}\s*=\s*(?P<value>\S.*?)\s*")


def _credential_parts(name: str, value: str) -> list[str]:
    """The parts of a credential header's value that are the credential: what follows a
    leading auth scheme word of any name (`Bearer `, `Key `, `Api-Key `), the value of
    each of its auth-params where it has those (`Token token=X`, quotes aside), else the
    whole; or each cookie's value (`a=X; b=Y`)."""
    if _COOKIE.search(name):
        return [pair.partition("=")[2] if "=" in pair else pair for pair in value.split(";")]
    scheme = _SCHEME.match(value)
    if scheme is None:
        return [value]
    rest = value[scheme.end() :]
    params = [_AUTH_PARAM.fullmatch(param) for param in rest.split(",")]
    if all(params):
        return [_unquoted(param.group("value")) for param in params if param]
    return [rest]


def _unquoted(text: str) -> str:
    """An auth-param's value without the quotes of a quoted-string (`"${T}"`)."""
    return text[1:-1] if len(text) > 1 and text[0] == text[-1] == '"' else text


def _only_references(text: str) -> bool:
    """Whether `text` is `${VAR}` references alone (spaces aside), none with a default
    (`${TOKEN:-…}` stores its default in the file)."""
    if any(match.group(2) for match in ENV_REF.finditer(text)):
        return False
    return not ENV_REF.sub("", text).strip()


def refuse_url_secrets(url: str) -> str:
    """`url` unchanged, or a ValueError naming where it holds a literal credential (its
    password, a query parameter, a key in its path; `url_credentials`) and how to take
    it from the environment instead. `${VAR}` references are no credential."""
    for what, value in url_credentials(url):
        if ENV_REF.sub("", value).strip():
            where = {"password": "its password", "path": "its path"}.get(
                what, f"its query parameter {what!r}"
            )
            raise ValueError(
                f"holds a secret in {where}; secrets are never stored in config files. "
                "Write ${VAR} in its place (e.g. https://host/mcp?api_key=${MCP_TOKEN}) "
                "and export VAR"
            )
    return url


def looks_like_secret(value: str) -> bool:
    """True for strings that look like a credential rather than a name or a URL.

    Deliberately loose: a false alarm costs the user one edit, a miss puts a key in a
    file that may be committed.
    """
    value = value.strip()
    if value.lower().startswith("bearer "):
        return looks_like_secret(value[7:])
    if key_prefix(value):
        return True
    if len(value) < 32 or not _TOKEN_CHARS.match(value) or value.isupper():
        return False
    if _PATH.match(value):  # /home/alice/projects/app2/data.sqlite
        return False
    # Long mixed-case-and-digit runs are random tokens; SHOUTING_NAMES are variables.
    return any(c.isdigit() for c in value) and any(c.islower() for c in value)


def key_prefix(value: str) -> str | None:
    """The prefix a provider gives its keys (`ghp_`, `sk-`, `AKIA`) when `value` starts
    with one and is long enough to be a key (an AWS key id: all of its 20 characters);
    None otherwise."""
    match = _KEY_PREFIX.match(value)
    return match.group() if match and len(value) >= 16 else None


# Words naming a credential, matched as whole parts of a name (`api_key`, `apiKey`,
# `X-Auth-Token`, `X-Amz-Signature`) or as the whole name run together (`apikey`): a
# piece of a word is none (`assignee`, `keywords`, `author`, `design`, `passenger`).
CREDENTIAL_WORDS = frozenset(
    {
        "key", "apikey", "accesskey", "accountkey", "sharedaccesskey", "privatekey",
        "token", "accesstoken", "authtoken", "refreshtoken", "idtoken", "jwt",
        "secret", "clientsecret", "password", "passwd", "pwd", "pass", "passphrase",
        "auth", "authorization", "sig", "signature", "sharedaccesssignature",
        "credential", "credentials",
    }
)  # fmt: skip
# A name's parts: words split at `_`, `-`, `.` and case (`XAPIKey` is X, API, Key).
_NAME_PART = re.compile(r"[A-Z]+(?![a-z])|[A-Z]?[a-z]+|[0-9]+")
_SECRET_HEADER = re.compile(r"cookie|credential", re.IGNORECASE)


def secret_parameter(name: str) -> bool:
    """Whether a query parameter, a field or a header of this name carries a credential:
    a part of it, or all of it run together, is one of `CREDENTIAL_WORDS`."""
    parts = [part.lower() for part in _NAME_PART.findall(name)]
    return "".join(parts) in CREDENTIAL_WORDS or any(p in CREDENTIAL_WORDS for p in parts)


def secret_header(name: str) -> bool:
    """Whether an HTTP header of this name carries a credential, whatever its value
    looks like (`Authorization`, `Cookie`, `X-API-Key`, `X-Auth-Token`)."""
    return secret_parameter(name) or bool(_SECRET_HEADER.search(name))


def url_secrets(url: str) -> list[str]:
    """The credentials a URL carries: `user:password@` (whole, so a short password is
    masked too) and its password, the values of query parameters named like one
    (`api-key=`, `token=`), and the segments of its path that look like a key
    (`/mcp/sk-ak-.../sse`)."""
    from urllib.parse import urlsplit

    try:
        parts = urlsplit(url)
    except ValueError:
        return []
    found = [f"{parts.username or ''}:{parts.password}"] if parts.password else []
    return found + [value for _, value in url_credentials(url)]


def url_credentials(url: str) -> list[tuple[str, str]]:
    """(what, value) of each credential in a URL: ("password", its password), then
    (the parameter's name, its value) for query parameters named like one, then ("path",
    the segment) for each segment of its path that looks like a key (`looks_like_secret`:
    hosted MCP servers hand out URLs such as `https://host/mcp/sk-ak-.../sse`; "path" is
    no credential's name, so no query parameter is taken for one)."""
    from urllib.parse import parse_qsl, urlsplit

    try:
        parts = urlsplit(url)
        password = parts.password
    except ValueError:
        return []
    found = [("password", password)] if password else []
    found += [(k, v) for k, v in parse_qsl(parts.query) if v and secret_parameter(k)]
    found += [("path", s) for s in parts.path.split("/") if s and looks_like_secret(s)]
    return found


def masked_url(url: str) -> str:
    """`url` as it may be shown: each of its credentials (`url_secrets`: `user:password`
    whole, a query value named like one, a path segment that looks like a key) masked
    where it stands; replacing their text wherever it occurred had masked the `p` of
    `https` for a password `p`."""
    from urllib.parse import unquote, urlsplit

    try:
        parts = urlsplit(url)
    except ValueError:
        return url
    spans = []
    host = url.find("//") + 2 if parts.netloc else 0
    if parts.password:
        spans.append((host, host + len(parts.netloc.rpartition("@")[0])))
    path = url.find(parts.path, host + len(parts.netloc)) if parts.path else -1
    offset = path
    for segment in parts.path.split("/") if path != -1 else ():
        if segment and looks_like_secret(unquote(segment)):
            spans.append((offset, offset + len(segment)))
        offset += len(segment) + 1
    spans += [span for name, _, span in _query_values(url, parts) if secret_parameter(name)]
    for start, end in sorted(spans, reverse=True):
        url = url[:start] + mask_secret(url[start:end]) + url[end:]
    return url


def secret_spellings(value: str) -> list[str]:
    """How text may spell `value`, longest first, each once: as it is; without its
    surrounding whitespace (what a request carries of it); and escaped as JSON and as
    Python's repr of it as text or as UTF-8 bytes show it (an HTTP library's error
    quotes a header as `b'Bearer KEY\\n'`)."""
    found: set[str] = set()
    for form in {value, value.strip()}:
        data = form.encode("utf-8", "backslashreplace")
        found |= {form, repr(form)[1:-1], repr(data)[2:-1], json.dumps(form)[1:-1]}
    return sorted(filter(None, found), key=len, reverse=True)


def mask_secret(value: str) -> str:
    """`sk-…abcd`: enough to tell two keys apart, never enough to use one. Below 24
    characters (a password, a short token) nothing of it is shown: four of twelve
    would be a third of it."""
    if len(value) < 24:
        return "…"
    return f"{value[:3]}…{value[-4:]}"


# A key's characters: quotes, = and : end it, and a sentence's full stop is not in it.
_WORD = re.compile(r"[A-Za-z0-9_\-.+/]*[A-Za-z0-9_\-+/]")
# Names, not values: SHOUTING_SNAKE variables, and snake_case identifiers of short
# parts (pk_orders_2024_id); a key's random part is one long run (sk_ and 32 hex).
_NAME = re.compile(r"[A-Z][A-Z0-9]*(_[A-Z0-9]+)+|[a-z][a-z0-9]*(_[a-z0-9]{1,15})+")
_PRIVATE_KEY = re.compile(r"-----BEGIN [A-Z0-9 ]*PRIVATE KEY( BLOCK)?(-----)?")
_PRIVATE_KEY_END = re.compile(r"-----END [A-Z0-9 ]*PRIVATE KEY( BLOCK)?-----")
# A service account's JSON: its key, whether or not it is written as PEM.
_PRIVATE_KEY_FIELD = re.compile(r"\"private_key\"\s*:\s*\"(?P<value>[^\"]+)")
_JWT = re.compile(r"\beyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]*")
# An AWS secret access key is 40 characters of base64, like many a hash: only its name
# beside it tells it apart.
_AWS_SECRET = re.compile(
    r"\b(?:aws_?)?secret_?access_?key[\"']?\s*[:=]\s*[\"']?"
    r"(?P<value>(?!/)[A-Za-z0-9/+]{40})(?![A-Za-z0-9/+=])",
    re.IGNORECASE,
)
# An Authorization header's credentials (any scheme), and a Bearer or Basic token
# anywhere: 8 characters or more, holding a digit or base64's padding as generated
# tokens do and words do not ("Bearer authentication", "Basic auth"); in a header, a
# capital inside too (base64 of a password: "Basic YWxhZGRpbjpvcGVuc2VzYW1l").
_AUTHORIZATION = re.compile(
    r"\b(?:Authorization[\"']?\s*[:=]\s*[\"']?(?P<scheme>[A-Za-z]+)|(?P<alone>Bearer|Basic))"
    r"\s+(?P<value>[A-Za-z0-9\-._~+/]{8,}=*)",
    re.IGNORECASE,
)
# A password or key field of a connection string or a libpq conninfo (Server=db;
# Password=..., host=db password=..., Azure's AccountKey=, a SAS's sig=); not a path
# (`pwd=/home/ada`).
_SECRET_FIELD = re.compile(
    r"(?:^|(?<=[;?&\s]))(?:password|passwd|pwd|pass|accountkey|sharedaccesskey"
    r"|sharedaccesssignature|sig)\s*=\s*(?P<value>(?![/~])[^;&\s'\"]+)",
    re.IGNORECASE,
)
_URL = re.compile(r"\b[A-Za-z][A-Za-z0-9+.-]*://[^\s'\"<>`]+")
# What stands for a secret kept elsewhere: `${DB_PASSWORD}`, `<password>`, `***`.
_PLACEHOLDER = re.compile(r"\$\{?\w+\}?|<[^>]*>|\{[^}]*\}|%\w+%|[*x.…]+", re.IGNORECASE)


def find_credentials(text: str) -> list[tuple[int, int, str]]:
    """(start, end, what) of each credential in `text`, in order, the span its secret
    part and `what` naming it without that part (`'ghp_'…`,
    `'postgres://admin:…@db/app'`, `a PEM private key`). The one detector of
    credentials in text: the `memory` tool refuses them, `lathe config show` masks them,
    commands never get a variable holding one (`lathe.exec.env`) nor the sandbox a git
    setting (`lathe.exec.view`).

    A credential is: a word starting as a provider's keys do (`key_prefix`) and holding a
    digit, as generated keys do and words like `sk-learn-compatible` do not, and neither
    a path (`hf_cache/bert-base-v2`) nor a name (`$ASIA_PACIFIC_KEY_V2`,
    `pk_orders_2024_id`); a JWT; an AWS secret access key beside its name; a URL's
    password, its user when that looks like a key (a DSN's `https://KEY@host`,
    `x-access-token@`), or a query parameter named like a credential
    (`url_credentials`) of 8 characters or more; a connection string's password field;
    an Authorization header's credentials or a Bearer or Basic token; a private key
    (PEM, or a service account's `"private_key"`). None that stands for a secret kept
    elsewhere (`${DB_PASSWORD}`, `<password>`). Hashes, UUIDs and paths are none of
    these. Where two overlap, the first named here is kept."""
    found: list[tuple[int, int, str | re.Match[str]]] = []  # a URL is named once all are

    def add(start: int, end: int, named: str | re.Match[str]) -> None:
        if start < end and all(end <= s or start >= e for s, e, _ in found):
            found.append((start, end, named))

    for word in _WORD.finditer(text):
        value = word.group()
        prefix = key_prefix(value)
        digit = any(c.isdigit() for c in value)
        if prefix and digit and "/" not in value and not _NAME.fullmatch(value):
            add(*word.span(), f"{prefix!r}…")
    for match in _JWT.finditer(text):
        add(*match.span(), "a JWT")
    for match in _AWS_SECRET.finditer(text):
        add(*match.span("value"), "an AWS secret access key")
    for url in _URL.finditer(text):
        for start, end in _url_credential_spans(url.group()):
            add(url.start() + start, url.start() + end, url)
    for match in _SECRET_FIELD.finditer(text):
        if not _PLACEHOLDER.fullmatch(match.group("value")):
            add(*match.span("value"), "a password")
    for match in _AUTHORIZATION.finditer(text):
        value, scheme = match.group("value"), match.group("scheme") or match.group("alone")
        generated = any(c.isdigit() for c in value) or value.endswith("=")
        if generated or (match.group("scheme") and any(c.isupper() for c in value[1:])):
            named = "a bearer token" if scheme.lower() == "bearer" else "an Authorization value"
            add(*match.span("value"), named)
    for match in _PRIVATE_KEY.finditer(text):
        end = _PRIVATE_KEY_END.search(text, match.end())
        body = text[match.end() : end.start() if end else len(text)]
        if body.strip():
            start = match.end() + len(body) - len(body.lstrip())
            add(start, match.end() + len(body.rstrip()), "a PEM private key")
        else:
            add(*match.span(), "a PEM private key")
    for match in _PRIVATE_KEY_FIELD.finditer(text):
        add(*match.span("value"), "a private key")
    found.sort(key=lambda span: span[0])

    def name(named: str | re.Match[str]) -> str:
        """A URL as it reads with every credential in it masked (a key in its path
        too), so a refusal says which one without repeating it."""
        if isinstance(named, str):
            return named
        shown = named.group()
        for start, end, _ in reversed(found):
            if named.start() <= start < named.end():
                start, end = start - named.start(), end - named.start()
                shown = shown[:start] + mask_secret(shown[start:end]) + shown[end:]
        return repr(shown)

    return [(start, end, name(named)) for start, end, named in found]


def mask_credentials(text: str) -> str:
    """`text` with each credential `find_credentials` finds masked (`mask_secret`:
    `sk-…abcd`), the words around it kept: a hook's
    `curl -H 'Authorization: Bearer sk-…abcd' URL` as `lathe config show` prints it."""
    for start, end, _ in reversed(find_credentials(text)):
        text = text[:start] + mask_secret(text[start:end]) + text[end:]
    return text


def masked_value(value: Any) -> Any:
    """A setting's value as output or a record may show it: a string that is a key
    whole, a URL's credentials and every credential inside any string (a key in a hook's
    curl command, a password in a server's argument) masked, in lists and tables too."""
    if isinstance(value, str) and looks_like_secret(value):
        return mask_secret(value)
    if isinstance(value, str) and "://" in value:
        return mask_credentials(masked_url(value))
    return _credentials_masked(value)


def _credentials_masked(value: Any) -> Any:
    if isinstance(value, str):
        return mask_credentials(value)
    if isinstance(value, dict):
        return {name: _credentials_masked(item) for name, item in value.items()}
    if isinstance(value, list | tuple):
        return [_credentials_masked(item) for item in value]
    return value


def _url_credential_spans(url: str) -> list[tuple[int, int]]:
    """Where in `url` its credentials are (`url_credentials`): the password, the user
    when there is no password and it looks like a key or names a token
    (`x-access-token@`, not `git@` nor `ada@`), and the values of query parameters named
    like one, 8 characters or more (`token_type=bearer` names a kind, not a token); none
    that stands for a secret kept elsewhere (`postgres://app:${DB_PASSWORD}@db/app`)."""
    from urllib.parse import urlsplit

    try:
        parts = urlsplit(url)
        password, user = parts.password, parts.username
    except ValueError:
        return []
    spans = []
    userinfo = parts.netloc.rpartition("@")[0]
    start = url.find("//") + 2
    if password and not _PLACEHOLDER.fullmatch(password):
        start += userinfo.index(":") + 1
        spans.append((start, start + len(password)))
    elif not password and user and (looks_like_secret(user) or secret_parameter(user)):
        spans.append((start, start + len(userinfo)))
    # The query's credentials as `url_credentials` finds them, from the split made here;
    # a path's segment is judged only in a URL that is a setting (`url_secrets`): in
    # text a link's commit hash looks as random as a key.
    for what, value, span in _query_values(url, parts):
        if secret_parameter(what) and not _PLACEHOLDER.fullmatch(value) and len(value) >= 8:
            spans.append(span)
    return spans


def _query_values(url: str, parts: SplitResult) -> Iterator[tuple[str, str, tuple[int, int]]]:
    """Each parameter of `url`'s query (`parts`, its split) that has a value: its name and
    value decoded as `parse_qsl` decodes them, and where the value stands in `url`."""
    from urllib.parse import unquote_plus

    start = url.index("?") + 1 if parts.query else 0
    for pair in parts.query.split("&") if parts.query else ():
        name, equals, value = pair.partition("=")
        if equals and value:
            at = start + len(name) + 1
            yield unquote_plus(name), unquote_plus(value), (at, at + len(value))
        start += len(pair) + 1
