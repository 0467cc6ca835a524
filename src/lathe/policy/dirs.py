"""Where the shell may be: the folders `cd`, `pushd` and `popd` lead to, as the walker
follows a command line without running it.

The shell is in one folder at a time, but the guard often cannot tell which: a `cd` in
an `if`, a loop or a function may run or not, a `cd` to a folder that is not there
fails and leaves the shell where it was, `cd -` returns to the folder before. So the
walker keeps every place the shell may be (`Dirs`), and every command is judged in each
of their folders; a folder only run time knows is None, and a destructive command there
is refused (`--approval full` turns an ask into a yes).
"""

from __future__ import annotations

import os
from dataclasses import dataclass, replace
from pathlib import Path

MAX_PLACES = 16  # past this many, the rest count as one place only run time knows
# Stands for a folder only run time knows, where the walker keeps what a command line
# writes to a relative path: `cd "$X"; echo ... > x.sh; bash x.sh` still reads it.
_SOMEWHERE = Path("/(a folder only known at run time)")


@dataclass(frozen=True)
class Dirs:
    """One place the shell may be: its folder, the one `cd -` goes back to (OLDPWD) and
    pushd's stack, most recent first. None where only run time knows: a new bash may
    inherit OLDPWD, and a stack that `pushd +N` rotated is unknown. `ok`: whether the
    `cd` just run succeeded to get here, for the `&&` or `||` after it (None: not
    known, or not just after a `cd`)."""

    cwd: Path | None
    previous: Path | None = None
    stack: tuple[Path | None, ...] | None = ()
    ok: bool | None = None


UNKNOWN = Dirs(None, None, None)


def merged(*places: Dirs) -> tuple[Dirs, ...]:
    """The places, each once. Past `MAX_PLACES`, only their folders are kept (where `cd -`
    or `popd` lead is then unknown), and past that many folders one unknown place
    stands for the rest."""
    unique = tuple(dict.fromkeys(places))
    if len(unique) <= MAX_PLACES:
        return unique
    folders = tuple(dict.fromkeys(Dirs(place.cwd, None, None) for place in unique))
    if len(folders) <= MAX_PLACES:
        return folders
    return (*folders[: MAX_PLACES - 1], UNKNOWN)


def unsure(places: tuple[Dirs, ...]) -> tuple[Dirs, ...]:
    """The places once a command other than `cd` ran: its status says nothing of them."""
    return merged(*(replace(place, ok=None) for place in places))


def after(
    base: str, values: list[str | None], here: Dirs, home: Path, cdpath: str | None
) -> list[Dirs]:
    """Where `base` (cd, pushd or popd) with these argument values (None: known only at
    run time) may leave a shell that was `here`. A move to a folder that is not on disk
    may fail, which leaves the shell `here` (bash goes on with the next command)."""
    stayed = replace(here, ok=False)
    if None in values:
        return [Dirs(None, here.cwd, here.stack if base == "cd" else None, True), stayed]
    words = [v for v in values if v is not None]
    if base == "cd":
        operands = [v for v in words if not v.startswith("-") or v == "-"]
        if not operands:
            target: Path | None = home
        elif operands[0] == "-":
            target = here.previous
        else:
            target = _cd_target(operands[0], here.cwd, home, cdpath)
        return _went(Dirs(target, here.cwd, here.stack, True), stayed)
    no_cd = "-n" in words
    operands = [v for v in words if v != "-n"]
    if any(v[:1] in "+-" for v in operands):
        return [Dirs(None, here.cwd, None, True), stayed]  # a rotation of the stack
    stack = here.stack
    if base == "pushd" and operands:
        target = _cd_target(operands[0], here.cwd, home, cdpath)
        if no_cd:
            pushed = None if stack is None else (target, *stack)
            return [Dirs(here.cwd, here.previous, pushed, True)]
        pushed = None if stack is None else (here.cwd, *stack)
        return _went(Dirs(target, here.cwd, pushed, True), stayed)
    if stack is None:
        return [Dirs(None, here.cwd, None, True), stayed]
    if not stack:
        return [stayed]  # "directory stack empty": nothing moves
    if base == "popd" and no_cd:
        return [Dirs(here.cwd, here.previous, stack[1:], True)]
    rest = stack[1:] if base == "popd" else (here.cwd, *stack[1:])  # pushd: swap the top two
    return _went(Dirs(stack[0], here.cwd, rest, True), stayed)


def _went(moved: Dirs, stayed: Dirs) -> list[Dirs]:
    if moved.cwd is not None and _is_dir(moved.cwd):
        return [moved]
    return [moved, stayed]


def _is_dir(path: Path) -> bool:
    """Whether `path` is a folder on disk; False (the `cd` may fail) when that cannot be
    checked: a name too long, a folder this user may not enter."""
    try:
        return path.is_dir()
    except OSError:
        return False


def _cd_target(name: str, cwd: Path | None, home: Path, cdpath: str | None) -> Path | None:
    """Where `cd name` goes as bash does it: the first CDPATH folder holding `name`,
    else `./name` (`CDPATH=~ cd victim` is `cd ~/victim` when that exists)."""
    if name.startswith(("/", ".")):
        return join_path(cwd, name)
    if cdpath is None:
        return None  # known only at run time
    for entry in cdpath.split(":") if cdpath else ():
        if entry == "~" or entry.startswith("~/"):  # after a `:` too, in an assignment
            entry = str(home) + entry[1:]
        folder = join_path(cwd, entry or ".")
        candidate = None if folder is None else folder / name
        if candidate is not None and _is_dir(candidate):
            return candidate
    return join_path(cwd, name)


def file_at(cwd: Path | None, value: str) -> Path:
    """The file `value` names from `cwd`, for what the command line writes and reads."""
    return join_path(_SOMEWHERE if cwd is None else cwd, value) or _SOMEWHERE


def join_path(base: Path | None, value: str) -> Path | None:
    """`value` as a path from the folder `base`; None when it is relative and `base`
    is only known at run time."""
    if value.startswith("/"):
        return Path(os.path.normpath(value))
    return None if base is None else Path(os.path.normpath(base / value))
