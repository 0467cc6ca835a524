"""Which program file a command runs when its name alone does not say: one found through
a PATH the command line changed (`PATH=./bin:$PATH ls` runs ./bin/ls), and the program
a link leads to (`ln -s /bin/rm del; ./del` runs rm). The walker judges the call under
each name it may have, so a deny or ask for any of them holds."""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from lathe.policy.dirs import join_path
from lathe.policy.shell_words import Word

if TYPE_CHECKING:
    from lathe.policy.shell_parse import Call, State, Walker
    from lathe.policy.streams import Stream

MAX_LINKS = 8  # links followed one after the other; a longer chain is a loop
RUN_TIME = object()  # a link's target only run time knows


def linked(w: Walker, call: Call, st: State, stdin: Stream | None) -> None:
    """A program named by a path that is a link (`./del`, a link to /bin/rm, made
    before or by `ln` earlier in the command line) is judged as its target too: a
    deny for either name holds. A link only run time knows the target of may be any
    program."""
    name, args = call.words[0], call.words[1:]
    for cwd in call.cwds:
        place = join_path(cwd, name.value or "")
        target = None if place is None else _link_target(w, place)
        if target is None:
            continue
        program = Word(name.text, None if target is RUN_TIME else str(target))
        if program.value is None:
            w.note("ask", f"{name.text} may be a link made to a program only known "
                          f"at run time: {call.text}")  # fmt: skip
        w.dispatch(replace(call, words=[program, *args], cwds=(cwd,)), st.copy(), stdin)


def _link_target(w: Walker, place: Path) -> Any:
    """The program `place` leads to under another name; None if none; `RUN_TIME`
    if only run time knows."""
    start = place
    for _ in range(MAX_LINKS):
        if place not in w.links:
            break
        if (found := w.links[place]) is None:
            return RUN_TIME
        place = found
    else:
        return None  # links made in a loop lead nowhere
    if place == start and (w.vague_links or _copied_unknown(w, place)):
        return RUN_TIME
    real = real_program(place)
    target = place if real is None else real
    return target if target.name != start.name else None


def _copied_unknown(w: Walker, place: Path) -> bool:
    """Whether `place` is in a folder a file only run time knows was copied into."""
    return any(w.links.get(folder, place) is None for folder in place.parents)


def made_links(w: Walker, call: Call, base: str, args: list[Word]) -> None:
    """Remember the links ln and `cp -s` make, the copies cp and install make and the
    files mv moves: a program there runs under another name (`cp /bin/rm d`). A file
    only run time knows landing at a known place (`cp "$P" d`, `cp "$P" bin/`) may be
    any program (None); a link or copy whose place only run time knows (and any link,
    where a word of ln or `cp -s` is unknown) may be any program named by a path. mv
    only renames what is already there: a move only run time knows is not followed."""
    from lathe.policy.file_commands import landings, lands_unknown, makes_links

    vague = any(word.value is None or word.glob for word in args) or None in call.cwds
    if vague and (makes_links(base, args) or (base != "mv" and lands_unknown(base, args))):
        w.vague_links = True
        return
    for cwd in call.cwds:
        for link, target in landings(base, args, None, cwd):
            if target is not None or base != "mv":
                w.links[link] = target


def hashed(w: Walker, args: list[Word]) -> None:
    """`hash -p FILE NAME...`: NAME runs FILE from now on."""
    values = [word.value for word in args]
    if "-p" not in values or values.index("-p") + 1 >= len(values):
        return
    at = values.index("-p")
    file = values[at + 1]
    for name in values[at + 2 :] or [None]:
        if name is None or not name.startswith("-"):
            w.hashed.setdefault(name, []).append(file)


def looked_up(w: Walker, call: Call, st: State, stdin: Stream | None) -> None:
    """A program named without a path runs the first file of that name in PATH: when
    the command line changed PATH (`PATH=./bin:$PATH ls`, `export PATH=...`, `env
    PATH=...`) or hashed the name (`hash -p`), each file it may be is judged as if
    named by its path (`./bin/ls`: a script is read). Where PATH is only known at run
    time, which program runs is too: asked about."""
    name, args = call.words[0], call.words[1:]
    value = name.value or ""
    files = [*w.hashed.get(value, []), *w.hashed.get(None, [])]
    changed = path_for(w, call, st)
    if changed is not None:
        path, by_file = changed
    elif files:
        path, by_file = "", True  # PATH as it came: only the hashed files are new
    else:
        return
    vague = None in files or (path is None and not by_file)
    for cwd in call.cwds:
        found: list[Path] = []
        if path:
            found, unsure = found_in_path(value, path, w.path, cwd, lambda file: _exists(w, file))
            # a link made to a program only run time knows may be in a folder it added
            vague = vague or unsure or (w.vague_links and _adds_folders(path, w.path))
        # `hash -p x foo` runs ./x, not a program named x in PATH
        named = [Word(name.text, f if "/" in f else f"./{f}") for f in files if f]
        named += [Word(name.text, str(f)) for f in found]
        for program in named:
            w.dispatch(replace(call, words=[program, *args], cwds=(cwd,)), st.copy(), stdin)
    if vague:
        w.note("ask", f"which program {name.text} is depends on a PATH or hash only "
                      f"known at run time: {call.text}")  # fmt: skip


def path_for(w: Walker, call: Call, st: State) -> tuple[str | None, bool] | None:
    """The PATH `call` runs with, and whether a script on disk set it to a value only
    known at run time; None when the command line left it as it came."""
    given = dict(call.environment).get("PATH")
    if given is not None:
        return given.value, False
    if "PATH" in st.variables:
        return st.variables["PATH"], st.path_by_file
    # A script run as a new shell (`./x.sh`) starts with its caller's.
    return w.exported[-1] if w.exported else None


def _exists(w: Walker, path: Path) -> bool:
    try:
        return path in w.files.written or path in w.links or path.is_file()
    except (OSError, ValueError):
        return False


def found_in_path(
    name: str, value: str, inherited: str | None, cwd: Path | None,
    exists: Callable[[Path], bool],
) -> tuple[list[Path], bool]:  # fmt: skip
    """The files bash may run for `name` with PATH `value` in `cwd`, in the order it
    looks: those in each folder that is not one of the `inherited` PATH's (where the
    user's own programs are), until an inherited folder holds a program of that name.
    The bool: a relative folder came first whose place only run time knows."""
    system = _system_folders(inherited)
    found: list[Path] = []
    for entry in value.split(":"):
        folder = entry or "."  # an empty entry is the current folder
        if folder in system:
            if _is_program(Path(folder) / name):
                break
            continue
        place = join_path(cwd, folder)
        if place is None:
            return found, True
        if exists(place / name):
            found.append(place / name)
    return found, False


def _system_folders(inherited: str | None) -> set[str]:
    """The absolute folders of the `inherited` PATH, where the user's own programs are."""
    return {entry for entry in (inherited or "").split(":") if entry.startswith("/")}


def _adds_folders(value: str, inherited: str | None) -> bool:
    """Whether PATH `value` has a folder the `inherited` PATH's system folders are not."""
    system = _system_folders(inherited)
    return any(entry not in system for entry in value.split(":"))


def either_path(one: str | None, other: str, inherited: str | None) -> str:
    """A PATH standing for `one` or `other`, whichever the shell holds: the folders of
    both, those not `inherited` first, so that a program is looked up in every folder
    the command line added in either."""
    entries = dict.fromkeys([*other.split(":"), *(one.split(":") if one is not None else [])])
    system = _system_folders(inherited)
    return ":".join([e for e in entries if e not in system] + [e for e in entries if e in system])


def real_program(path: Path) -> Path | None:
    """The file `path` leads to through links on disk, when its name is another (`./del`
    a link to /usr/bin/rm); None when it is no link or keeps its name."""
    try:
        real = Path(os.path.realpath(path))
    except (OSError, ValueError):
        return None
    return real if real.name != path.name else None


def _is_program(path: Path) -> bool:
    try:
        return path.is_file() and os.access(path, os.X_OK)
    except (OSError, ValueError):
        return False
