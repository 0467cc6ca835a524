"""What a repository's history would reveal of files a read rule denies.

A read rule hides a file from the tools and from commands in the sandbox, but a file
that was ever committed (or staged) is also in `.git`: `git show HEAD:.env` prints it.
`denied_in_history` names such paths so the sandbox can hide the repository itself.
"""

from __future__ import annotations

import subprocess
from collections.abc import Sequence
from pathlib import Path

from lathe.patterns import PathPatterns

_TIMEOUT_S = 10.0
_GIT_ENV = {"GIT_CONFIG_NOSYSTEM": "1", "GIT_CONFIG_GLOBAL": "/dev/null", "LC_ALL": "C"}


def denied_in_history(workspace: Path, patterns: Sequence[str]) -> list[str] | None:
    """The denied paths the repository at `workspace` holds in any commit reachable from
    a ref or a reflog, or in its index, sorted; [] when none or no repository; None when
    git could not answer in time (treat as "maybe")."""
    rules = PathPatterns(patterns)
    if not rules or not (workspace / ".git").exists():
        return []
    base = ["git", "-C", str(workspace), "-c", "core.fsmonitor=false", "-c", "core.quotePath=false"]
    listings = (
        [*base, "log", "--all", "--reflog", "--format=", "--name-only", "--no-renames"],
        [*base, "ls-files", "--cached"],
    )
    seen: set[str] = set()
    for argv in listings:
        try:
            done = subprocess.run(
                argv, capture_output=True, text=True, timeout=_TIMEOUT_S,
                stdin=subprocess.DEVNULL, env=_environment(), check=False,
            )  # fmt: skip
        except subprocess.TimeoutExpired:
            return None
        except OSError:
            return []
        seen.update(line for line in done.stdout.splitlines() if line)
    return sorted(path for path in seen if rules.matches(path))


def _environment() -> dict[str, str]:
    import os

    return {**os.environ, **_GIT_ENV}
