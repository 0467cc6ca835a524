"""The environment commands start with: lathe's own, minus its secrets.

Masking output afterwards only catches a secret as it was; a command can re-encode it
(`| rev`, base64, split across lines). So commands (bash, the verify command, hooks)
never receive the provider keys lathe uses, nor any variable whose name looks like it
holds a secret, unless the user lets that one through by name.
"""

from __future__ import annotations

import fnmatch
import re
from collections.abc import Iterable, Mapping

# Names that hold credentials by convention: OPENAI_API_KEY, GITHUB_TOKEN, DB_PASSWORD,
# AWS_SECRET_ACCESS_KEY, GOOGLE_APPLICATION_CREDENTIALS, GITLAB_PAT, MYSQL_PWD,
# PROXY_AUTH, CI_JOB_JWT, DOCKER_AUTH_CONFIG, SLACK_WEBHOOK_URL, SESSION_COOKIE ...
# (not SSH_AUTH_SOCK, a socket's path).
# The CI names match at the end only: JWT_ALGORITHM, WEBHOOK_PORT, COOKIE_DOMAIN and
# AZURE_AUTH_LOCATION are settings tools need.
SECRET_NAME = re.compile(
    r"KEY|TOKEN|SECRET|PASSWORD|PASSWD|PASSPHRASE|CREDENTIAL"
    r"|JWT(_V\d+)?$|WEBHOOK(_URL)?$|COOKIE$|_AUTH_CONFIG$"
    r"|_PAT$|_PWD$|_PASS$|_AUTH$|^AUTH_|_DSN$",
    re.IGNORECASE,
)
# A URL carrying a secret before its host: postgres://user:pass@host/db,
# https://u:tok@git.example, and a DSN's key alone (https://KEY@o1.ingest.example/2).
_URL_WITH_PASSWORD = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*://[^/@\s]+@")


def is_secret_name(name: str) -> bool:
    return bool(SECRET_NAME.search(name))


def holds_secret(name: str, value: str) -> bool:
    """A variable commands must not see: a secret-looking name, or a URL with a password."""
    return is_secret_name(name) or bool(_URL_WITH_PASSWORD.match(value))


def command_environment(
    environ: Mapping[str, str], *, hide: Iterable[str] = (), passthrough: Iterable[str] = ()
) -> dict[str, str]:
    """`environ` without the names in `hide` (always) and without secret-looking names,
    except those matching a `passthrough` entry (a name or a glob such as `NPM_*`)."""
    hidden = set(hide)
    allowed = tuple(passthrough)
    return {
        name: value
        for name, value in environ.items()
        if name not in hidden
        and (not holds_secret(name, value) or any(fnmatch.fnmatchcase(name, p) for p in allowed))
    }


def secret_values(environ: Mapping[str, str], *, min_chars: int = 8) -> list[str]:
    """Values of secret-looking variables worth masking in output: long enough, one
    word, not a path (GOOGLE_APPLICATION_CREDENTIALS names a file, it is none), and not
    a plain word (POSTGRES_PASSWORD=postgres would mask every "postgres" in the code)."""
    return [
        value
        for name, value in environ.items()
        if holds_secret(name, value) and len(value) >= min_chars and maskable(value)
    ]


def maskable(value: str) -> bool:
    """Whether a secret's value can be masked wherever it appears: one word, not a path,
    not a plain word (`SERVICE_AUTH=production` would mask every "production")."""
    return (
        not any(c.isspace() for c in value)
        and not value.startswith(("/", "~", "."))
        and not value.isalpha()
    )
