"""The files a check is made of: the tests and their data, conftest.py, the test
runner's configuration, and the files the verify command itself names or runs (a
Makefile for `make test`, a script). A check that passes only because these changed
verifies nothing, so the verify gate says which of them changed since it first ran,
and code in a reply never changes them (`reply_code`).

Also the files a call changes (`changed_by`), named before it runs: their content then
and at the end tells the gate whether the run changed anything at all.
"""

from __future__ import annotations

import hashlib
import os
import re
import stat
from collections.abc import Collection
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from lathe.tools.base import Tool

RUNNER_CONFIGS = (
    "pytest.ini", ".pytest.ini", "pytest.toml", ".pytest.toml", "tox.ini", "setup.cfg",
    "pyproject.toml", "noxfile.py",
)  # fmt: skip
"""The test runners' configuration files (by name): one can make any check pass."""
RUNNER_SHADOW = re.compile(
    r"^(pytest|_pytest|pluggy|iniconfig|py)(\.py|(\.[^/]*)?\.(so|pyd))$"
    r"|^(pytest|_pytest|pluggy|iniconfig)/"
    r"|^py/__init__(\.py|(\.[^/]*)?\.(so|pyd))$"
    r"|(^|/)([^/]*\.pth|(site|user)customize\.py)$"
)
"""What makes a check pass whatever the code: the test runner's own modules shadowing it
from the workspace's top (`python -m pytest` puts it first on sys.path: a `pluggy.py`
printed "1 passed"; deeper, as in src/_pytest/, it is a project's own), as a module, a
package (`py`, which pytest imports as it starts, only by its `__init__`: a project's
`py/` folder is common) or an extension module, and what Python runs as it starts: a
`.pth`, sitecustomize.py."""
CHECK_FILE = re.compile(
    r"(^|/)(tests?|__tests__|spec|specs|testdata|test_data|fixtures|golden)/"
    r"|(^|/)(test[^/]*\.py|test_[^/]*|[^/]*_test\.\w+|[^/]*\.(test|spec)"
    r"\.\w+|conftest\.py|"
    + "|".join(map(re.escape, RUNNER_CONFIGS))
    + r"|(jest|vitest|karma|playwright)\.config\.\w+|package\.json|pytest\.py)$"
    r"|(^|/)pytest/[^/]+\.py$|" + RUNNER_SHADOW.pattern
)
# What a runner named in the verify command reads without the command naming it.
_RUNNER_FILES = {
    "make": ("Makefile", "makefile", "GNUmakefile"),
    "just": ("justfile", "Justfile", ".justfile"),
}
RUNNER_FILE_NAMES = frozenset(name for names in _RUNNER_FILES.values() for name in names)
"""The names of the files a command runner reads (a Makefile), whichever command runs it."""
# Folders no check file of the project's own lives in, and that can be huge: those
# pytest skips too (`norecursedirs`), and `target/`, where Maven and sbt copy a
# project's test resources (seen as check files the check itself added). Others are
# skipped when they are a virtualenv or a build cache (`_left_out`): pytest collects a
# plain `env/`, and so runs its conftest.py.
_SKIPPED = frozenset({"node_modules", "__pycache__", "venv", "build", "dist", "target"})
_GENERATED_MARKS = ("pyvenv.cfg", "conda-meta", "CACHEDIR.TAG")


def check_file_digests(workspace: Path, command: str | None = None) -> dict[str, str]:
    """Each check file of `workspace` (relative path) and a digest of its content; with
    the verify `command`, the workspace files it names or its runner reads too."""
    found: dict[str, str] = {}
    for relative in named_by(command, workspace) if command else ():
        if (digest := digest_of(workspace / relative)) is not None:
            found[relative] = digest
    for folder, dirs, files in os.walk(workspace):
        dirs[:] = [d for d in dirs if not _left_out(Path(folder, d))]
        base = Path(folder).relative_to(workspace).as_posix()
        for name in files:
            relative = name if base == "." else f"{base}/{name}"
            if not CHECK_FILE.search(relative):
                continue
            if (digest := digest_of(Path(folder, name))) is not None:
                found[relative] = digest
    return found


def is_check_file(relative: str, workspace: Path, named: Collection[str] = ()) -> bool:
    """Whether the file at `relative` (a posix path in `workspace`) is one that
    `check_file_digests` reads: `named` are the files the verify command names
    (`named_by`)."""
    if relative in named:
        return True
    if not CHECK_FILE.search(relative):
        return False
    folders = relative.split("/")[:-1]
    return not any(_left_out(workspace.joinpath(*folders[: n + 1])) for n in range(len(folders)))


def judged_against(now: dict[str, str], earlier: dict[str, bytes | None]) -> dict[str, str]:
    """The check files' digests a conversation that goes on is judged against: `now`,
    except each file in `earlier` (as it was before the conversation's first change to
    it, None: absent) as it was then."""
    baseline = dict(now)
    for relative, content in earlier.items():
        if content is None:
            baseline.pop(relative, None)
        else:
            baseline[relative] = _content_digest(content)
    return baseline


def _left_out(folder: Path) -> bool:
    """Whether no check file is looked for in `folder`: a hidden one, one of `_SKIPPED`,
    or a virtualenv, a conda environment or a tagged build cache, which tools make and
    pytest does not collect."""
    if folder.name.startswith(".") or folder.name in _SKIPPED:
        return True
    return any(os.path.lexists(folder / mark) for mark in _GENERATED_MARKS)


def digest_of(path: Path) -> str | None:
    """A digest of a regular file's content; None for anything else: opening a named
    pipe the model made among the tests waited for a writer for good."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
        with os.fdopen(fd, "rb") as handle:
            if not stat.S_ISREG(os.fstat(handle.fileno()).st_mode):
                return None
            return _content_digest(handle.read())
    except OSError:
        return None


def _content_digest(content: bytes) -> str:
    return hashlib.blake2b(content, digest_size=16).hexdigest()


def changed(before: dict[str, str], after: dict[str, str]) -> list[str]:
    """The check files added, removed or changed from `before` to `after`, sorted."""
    return sorted(
        path for path in before.keys() | after.keys() if before.get(path) != after.get(path)
    )


def named_by(command: str, workspace: Path) -> list[str]:
    """The workspace files `command` runs or names, as `rules.files_named` reads a hook's
    or a server's command (`sh run_tests.sh`, `python -m mycheck`, `uv --directory sub
    run s.py`, `--script=check.py`; a package run is its `__main__.py`, not the project
    it imports), or whose runner reads them (`make test`: the Makefile; `make -C sub
    test`: sub's), each word read from the folder the shell is in there: the command is
    parsed as lathe's guard parses it, so `cd ci && sh check.sh` names ci/check.sh, and
    `sh -c 'sh ci/check.sh'` does too. Before, each word was looked for at the
    workspace's top, and `python -m mycheck` named nothing: each had a plain `verified`
    after the model emptied the script."""
    from lathe.policy.rules import files_named, make_moves
    from lathe.policy.shell_parse import parse_script

    root = Path(os.path.realpath(workspace))
    try:
        home = Path.home()
        commands = parse_script(command, cwd=root, home=home).commands
    except (RuntimeError, RecursionError, OSError):  # no home, nested too deep, unreadable
        commands = []
    named: set[str] = set()
    for simple in commands:
        if simple.cwd is None:
            continue
        # A word known only at run time keeps its place (`-m $X`) and names nothing.
        words = [word.value if word.value is not None else "${?}" for word in simple.words]
        named |= {
            pattern[1:]
            for pattern in files_named(words, simple.cwd, root, packages=False)
            if (root / pattern[1:]).is_file()
        }
        base = os.path.basename(simple.name)
        folder = simple.cwd
        for move in make_moves(words[1:]) if base == "make" else ():
            folder = folder / move  # each from the one before; the last holds the Makefile
        for candidate in (folder / name for name in _RUNNER_FILES.get(base, ())):
            try:
                path = Path(os.path.realpath(candidate))
            except (OSError, ValueError):  # a word holding a NUL byte
                continue
            if path.is_relative_to(root) and path.is_file():
                named.add(path.relative_to(root).as_posix())
    return sorted(named)


# The commands whose every file change lathe's guard names (`policy.command.analyze`'s
# `changes`: `sed -i`, `cp`, `mv`, `tee`, ...); another that is not one that only
# looks (`evidence.looks_only`) may change any file.
_NAMED_CHANGES = frozenset({"sed", "tee", "cp", "mv", "unlink", "shred", "truncate", "rsync", "rm"})
# ... but not those of a folder's content: `rm -r`, `cp -a`, `rsync -r`.
_RECURSIVE = re.compile(r"^(-[a-zA-Z]*[rRa][a-zA-Z]*|--recursive|--archive)$")
_GLOB = re.compile(r"[*?[]")


def changed_by(tool: Tool | None, arguments: dict[str, Any], workspace: Path) -> list[Path] | None:
    """The files a call may change, named before it runs: none for a tool that only
    reads (or none of that name); the file an edit or a write names; those a command's
    redirects and file commands name (`sed -i`, `cp`, `mv`, `tee`, `rm`, not of a
    folder's content) when it runs nothing else that may change files. None when they
    cannot be named: another program (`python fix.py`), a word known only at run time,
    a folder, a pattern, a command the guard does not let run as it is."""
    if tool is None or tool.read_only:
        return []
    command = tool.shell_command(arguments)
    if command is not None:
        return _changed_by_command(command, workspace)
    named = arguments.get(tool.path_argument) if tool.path_argument else None
    if not isinstance(named, str):
        return None
    try:
        return [Path(os.path.realpath(Path(workspace) / os.path.expanduser(named)))]
    except (OSError, ValueError):  # a NUL byte: the tool refuses it
        return []


def _changed_by_command(command: str, workspace: Path) -> list[Path] | None:
    from lathe.agent.evidence import looks_only
    from lathe.policy.command import analyze

    try:
        analysis = analyze(command, workspace=workspace, home=Path.home())
    except RuntimeError:  # no home folder known
        return None
    if analysis.decision != "allow":  # what runs is known only at run time, or it asks
        return None
    for simple in (*analysis.commands, *analysis.indirect, *analysis.in_files):
        if not simple.resolved:
            return None
        words, base = [simple.name, *simple.args], os.path.basename(simple.name)
        if base not in _NAMED_CHANGES and not looks_only(words):
            return None
        if base in ("rm", "cp", "rsync") and any(_RECURSIVE.match(w) for w in words[1:]):
            return None
    changed = list(analysis.changes)
    if any(_GLOB.search(str(path)) or path.is_dir() for path in changed):
        return None
    return changed
