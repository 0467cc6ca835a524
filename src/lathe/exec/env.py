"""The environment commands start with: lathe's own, minus its secrets.

Masking output afterwards only catches a secret as it was; a command can re-encode it
(`| rev`, base64, split across lines). So commands (bash, the verify command, hooks)
never receive the provider keys lathe uses, nor any variable whose name looks like it
holds a secret, unless the user lets that one through by name.
"""

from __future__ import annotations

import fnmatch
import functools
import re
from collections.abc import Iterable, Mapping

from lathe.config.secrets import find_credentials

# Names that hold credentials by convention: OPENAI_API_KEY, GITHUB_TOKEN, DB_PASSWORD,
# AWS_SECRET_ACCESS_KEY, GOOGLE_APPLICATION_CREDENTIALS, GITLAB_PAT, MYSQL_PWD,
# PROXY_AUTH, CI_JOB_JWT, DOCKER_AUTH_CONFIG, SLACK_WEBHOOK_URL, SESSION_COOKIE,
# AUTHORIZATION, PGPASS, SMTP_PASS, SMTP_PW, LDAP_BIND_PW, SSHPASS (sshpass -e), STRIPE_SK,
# GOOGLE_CREDS, and the sessions vault CLIs unlock with, named one by one (Bitwarden's
# BW_SESSION, 1Password's OP_SESSION_<account>; a session's token or key,
# AWS_SESSION_TOKEN, by its TOKEN or KEY) (not SSH_AUTH_SOCK).
# The CI names match at the end only: JWT_ALGORITHM, WEBHOOK_PORT, COOKIE_DOMAIN and
# AZURE_AUTH_LOCATION are settings tools need. PASS and SESSION count only as whole
# parts of a name in those places: COMPASS_URL, PASS_THROUGH, NO_PASS, TMUX_SESSION,
# PIPENV_SESSION, XDG_SESSION_TYPE, DBUS_SESSION_BUS_ADDRESS (without it a D-Bus client
# starts a bus of its own), DESKTOP_SESSION, GIT_ASKPASS and PGPASSFILE hold none; nor
# do PWD and OLDPWD (_PW and _PWD need the underscore).
SECRET_NAME = re.compile(
    r"KEY|TOKEN|SECRET|PASSWORD|PASSWD|PASSPHRASE|CREDENTIAL|AUTHORIZATION(_HEADER)?$"
    r"|JWT(_V\d+)?$|WEBHOOK(_URL)?$|COOKIE$|_AUTH_CONFIG$"
    r"|_PAT$|_PWD?$|_SK$|_AUTH$|^AUTH_|_DSN$|(^|_)CREDS?(_|$)"
    r"|(^|(?<!^NO)_|^PG|^SSH)PASS$"
    r"|^BW_SESSION$|^OP_SESSION(_|$)",
    re.IGNORECASE,
)


def is_secret_name(name: str) -> bool:
    return bool(SECRET_NAME.search(name))


def holds_secret(name: str, value: str) -> bool:
    """A variable commands must not see: a secret-looking name, or a value carrying a
    secret (`holds_secret_value`)."""
    return is_secret_name(name) or holds_secret_value(value)


@functools.lru_cache(maxsize=4096)
def holds_secret_value(text: str) -> bool:
    """Whether `text` carries a credential (`config.secrets.find_credentials`): a URL's
    password or key, a password field, a private key, an Authorization header's
    credentials, an issued token... Remembered: every command's environment asks it of
    the same values (0.25 -> 3.1 ms a command for 99 variables, unremembered)."""
    return bool(find_credentials(text))


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
    a plain word (POSTGRES_PASSWORD=postgres would mask every "postgres" in the code).
    Of a value that is no one word, the secret inside it: a connection string's
    password, an Authorization header's token (a file may hold the same)."""
    found = []
    for name, value in environ.items():
        if holds_secret(name, value):
            if maskable(value):
                parts = [value]
            else:
                parts = [value[s:e] for s, e, _ in find_credentials(value)]
            found += [part for part in parts if len(part) >= min_chars and maskable(part)]
    return found


def maskable(value: str) -> bool:
    """Whether a secret's value can be masked wherever it appears: one word, not a path,
    not a plain word (`SERVICE_AUTH=production` would mask every "production")."""
    return (
        not any(c.isspace() for c in value)
        and not value.startswith(("/", "~", "."))
        and not value.isalpha()
    )
