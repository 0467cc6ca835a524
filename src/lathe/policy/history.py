"""What a repository's object store would reveal of files a read rule denies.

A read rule hides a file from the tools and from commands in the sandbox, but a file
that was ever committed, stashed or staged is also in `.git`: `git show HEAD:.env`
prints it. `denied_in_history` names such files so the sandbox can hide the repository
itself. It looks at every path in a commit reachable from a ref or a reflog, at the
index, and at whether the denied files' present contents are stored as objects at all
(a blob staged and then unstaged is in no commit and no index, yet `git cat-file` shows
it). Any doubt — git failing, refusing the repository, or taking too long — is "maybe".

Git runs here on the host, so nothing in the repository's own config may make it run a
program: signature checking, fsmonitor and the like are switched off on the command line.
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Sequence
from pathlib import Path

from lathe.patterns import PathPatterns

_TIMEOUT_S = 10.0
_GIT_ENV = {"GIT_CONFIG_NOSYSTEM": "1", "GIT_CONFIG_GLOBAL": "/dev/null", "LC_ALL": "C"}
_NO_PROGRAMS = (
    "-c", "core.fsmonitor=false", "-c", "log.showSignature=false", "-c", "core.pager=cat",
    "-c", "diff.external=", "-c", "core.hooksPath=/dev/null",
)  # fmt: skip


class _Doubt(Exception):
    """git could not give a trustworthy answer."""


def denied_in_history(workspace: Path, patterns: Sequence[str]) -> list[str] | None:
    """The denied paths the repository at `workspace` holds, sorted; [] when none or
    no repository; None when git could not say (treat as "maybe")."""
    rules = PathPatterns(patterns)
    if not rules or not (workspace / ".git").exists():
        return []
    try:
        committed = _paths(workspace, "log", "--all", "--reflog", "--no-show-signature",
                           "--format=", "--name-only", "--no-renames", "-z")  # fmt: skip
        staged = _paths(workspace, "ls-files", "--cached", "-z")
        found = {path for path in committed | staged if rules.matches(path)}
        found |= _stored_now(workspace, rules)
    except _Doubt:
        return None
    return sorted(found)


def _paths(workspace: Path, *args: str) -> set[str]:
    return {path for path in _git(workspace, *args).split("\0") if path}


def _stored_now(workspace: Path, rules: PathPatterns) -> set[str]:
    """Denied files whose present content is an object in the repository."""
    files = [p for p in rules.existing(workspace) if p.is_file() and not p.is_symlink()]
    if not files:
        return set()
    names = [os.path.relpath(p, workspace) for p in files]
    hashes = _git(workspace, "hash-object", "--no-filters", "--", *names).split()
    if len(hashes) != len(names):
        raise _Doubt
    answer = _git(workspace, "cat-file", "--batch-check", stdin="\n".join(hashes) + "\n")
    stored = [not line.endswith(" missing") for line in answer.splitlines()]
    return {name for name, present in zip(names, stored, strict=False) if present}


def _git(workspace: Path, *args: str, stdin: str | None = None) -> str:
    try:
        done = subprocess.run(
            ["git", "-C", str(workspace), *_NO_PROGRAMS, *args],
            input=stdin, capture_output=True, text=True, timeout=_TIMEOUT_S,
            stdin=None if stdin is not None else subprocess.DEVNULL,
            env={**os.environ, **_GIT_ENV}, check=False,
        )  # fmt: skip
    except (OSError, subprocess.TimeoutExpired):
        raise _Doubt from None
    if done.returncode != 0:  # e.g. "dubious ownership": no answer is not "nothing"
        raise _Doubt
    return done.stdout
