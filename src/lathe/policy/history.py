"""What a repository's object store would reveal of files a read rule denies.

A read rule hides a file from the tools and from commands in the sandbox, but a file
that was ever committed, stashed or staged is also in `.git`: `git show HEAD:.env`
prints it. `denied_in_history` names such files so the sandbox can hide the repository
itself. It looks, in the workspace's repository and in every one nested in it, at
every path in a commit reachable from a ref or a reflog, at the
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
    """The denied paths the repositories in `workspace` hold (its own, and any nested
    in it: a vendored clone, a submodule, whose objects may lie in the outer `.git`),
    as workspace paths, sorted; [] when none or no repository; None when git could
    not say (treat as "maybe")."""
    rules = PathPatterns(patterns)
    repositories = _repositories_in(workspace) if rules else []
    if not repositories:
        return []
    # The denied files there now, found in one walk of the workspace for every repository.
    denied = [p for p in rules.existing(workspace) if p.is_file() and not p.is_symlink()]
    found: set[str] = set()
    try:
        for repository in repositories:
            found |= _held(workspace, repository, rules, denied)
    except _Doubt:
        return None
    return sorted(found)


def _repositories_in(workspace: Path) -> list[Path]:
    """Each folder in `workspace` with a `.git` (a folder, or a file naming one)."""
    return [entry.parent for entry in PathPatterns([".git"]).existing(workspace)]


def _held(workspace: Path, repository: Path, rules: PathPatterns, denied: list[Path]) -> set[str]:
    """The workspace paths of denied files `repository` holds; `denied`: those present."""
    prefix = os.path.relpath(repository, workspace)
    prefix = "" if prefix == "." else prefix + "/"
    committed = _paths(repository, "log", "--all", "--reflog", "--no-show-signature",
                       "--format=", "--name-only", "--no-renames", "-z")  # fmt: skip
    staged = _paths(repository, "ls-files", "--cached", "-z")
    found = {prefix + path for path in committed | staged if rules.matches(prefix + path)}
    return found | _stored_now(
        workspace, repository, [p for p in denied if p.is_relative_to(repository)]
    )


def _paths(repository: Path, *args: str) -> set[str]:
    return {path for path in _git(repository, *args).split("\0") if path}


def _stored_now(workspace: Path, repository: Path, files: list[Path]) -> set[str]:
    """Those of `files` (denied, in `repository`'s folder) whose present content is an
    object in it."""
    if not files:
        return set()
    names = [os.path.relpath(p, repository) for p in files]
    hashes = _git(repository, "hash-object", "--no-filters", "--", *names).split()
    if len(hashes) != len(names):
        raise _Doubt
    answer = _git(repository, "cat-file", "--batch-check", stdin="\n".join(hashes) + "\n")
    stored = [not line.endswith(" missing") for line in answer.splitlines()]
    found = (p for p, present in zip(files, stored, strict=False) if present)
    return {os.path.relpath(p, workspace) for p in found}


def _git(repository: Path, *args: str, stdin: str | None = None) -> str:
    try:
        done = subprocess.run(
            ["git", "-C", str(repository), *_NO_PROGRAMS, *args],
            input=stdin, capture_output=True, text=True, timeout=_TIMEOUT_S,
            stdin=None if stdin is not None else subprocess.DEVNULL,
            env={**os.environ, **_GIT_ENV}, check=False,
        )  # fmt: skip
    except (OSError, subprocess.TimeoutExpired):
        raise _Doubt from None
    if done.returncode != 0:  # e.g. "dubious ownership": no answer is not "nothing"
        raise _Doubt
    return done.stdout
