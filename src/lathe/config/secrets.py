"""Recognising and masking API keys, so config never stores one and output never shows one."""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping

# Vendor key prefixes seen in the wild; a value starting with one is a key, not a name.
# An AWS key id is one only whole (its prefix begins names: ASIA_OPENAI_API_KEY).
_KEY_PREFIX = re.compile(
    r"^(sk-ant-|sk-proj-|sk-|sk_|pk_|rk_|gsk_|xai-|AIza|ghp_|github_pat_|hf_"
    r"|(AKIA|ASIA)(?=[A-Z0-9]{16}\b))"
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
    masked too) and its password, and the values of query parameters named like one
    (`api-key=`, `token=`)."""
    from urllib.parse import urlsplit

    try:
        parts = urlsplit(url)
    except ValueError:
        return []
    found = [f"{parts.username or ''}:{parts.password}"] if parts.password else []
    return found + [value for _, value in url_credentials(url)]


def url_credentials(url: str) -> list[tuple[str, str]]:
    """(what, value) of each credential in a URL: ("password", its password), then
    (the parameter's name, its value) for query parameters named like one."""
    from urllib.parse import parse_qsl, urlsplit

    try:
        parts = urlsplit(url)
        password = parts.password
    except ValueError:
        return []
    found = [("password", password)] if password else []
    found += [(k, v) for k, v in parse_qsl(parts.query) if v and secret_parameter(k)]
    return found


def masked_url(url: str) -> str:
    """`url` as it may be shown: its credentials masked (`url_secrets`)."""
    for secret in sorted(url_secrets(url), key=len, reverse=True):
        url = url.replace(secret, mask_secret(secret))
    return url


def mask_secret(value: str) -> str:
    """`sk-…abcd`: enough to tell two keys apart, never enough to use one. Below 24
    characters (a password, a short token) nothing of it is shown: four of twelve
    would be a third of it."""
    if len(value) < 24:
        return "…"
    return f"{value[:3]}…{value[-4:]}"
