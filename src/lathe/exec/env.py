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
# AWS_SECRET_ACCESS_KEY, GOOGLE_APPLICATION_CREDENTIALS ...
SECRET_NAME = re.compile(r"KEY|TOKEN|SECRET|PASSWORD|PASSWD|CREDENTIAL", re.IGNORECASE)


def is_secret_name(name: str) -> bool:
    return bool(SECRET_NAME.search(name))


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
        and (not is_secret_name(name) or any(fnmatch.fnmatchcase(name, p) for p in allowed))
    }


def secret_values(environ: Mapping[str, str], *, min_chars: int = 8) -> list[str]:
    """Values of secret-looking variables worth masking in output: long enough, one
    word, and not a path (GOOGLE_APPLICATION_CREDENTIALS names a file, it is none)."""
    return [
        value
        for name, value in environ.items()
        if is_secret_name(name)
        and len(value) >= min_chars
        and not any(c.isspace() for c in value)
        and not value.startswith(("/", "~", "."))
    ]
