"""Which files a command removes or overwrites, read from its argv.

`truncate -s0 ~/.bashrc`, `cp /dev/null ~/.bashrc`, `mv ~ /tmp/x`, `ln -sf x ~/.bashrc`:
each function here knows one command's options well enough to name the paths it
changes, and how (`follow`: the change goes through a symlink at the path, as a write
does; a rename or unlink replaces the link itself). Whether a path may be changed is the
caller's question (`Places.change`). Words only known at run time are skipped; the
caller decides what an unknown path means for each command.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from lathe.policy.dirs import join_path
from lathe.policy.shell_words import Word


@dataclass(frozen=True)
class Change:
    word: Word
    how: str  # e.g. "truncate empties", read as "<how> <word> (<where>)"
    follow: bool


@dataclass
class _Argv:
    operands: list[Word]
    options: dict[str, str]

    def has(self, *names: str) -> bool:
        return any(self.get(n) is not None for n in names)

    def get(self, name: str) -> str | None:
        if name in self.options:
            return self.options[name]
        if name.startswith("--"):  # GNU accepts any unambiguous prefix: --target=
            for key, value in self.options.items():
                if key.startswith("--") and len(key) > 4 and name.startswith(key):
                    return value
        return None


def _argv(
    args: Sequence[Word],
    short_values: str = "",
    long_values: Sequence[str] = (),
    attached: str = "",
) -> _Argv:
    """Split GNU-style options from operands. `short_values` and `long_values` take a
    value; `attached` letters take one only when it is written on them (`sed -i.bak`)."""
    out = _Argv([], {})
    i = 0
    done = False
    while i < len(args):
        value = args[i].value
        if done or value is None or value == "-" or not value.startswith("-"):
            out.operands.append(args[i])
        elif value == "--":
            done = True
        elif value.startswith("--"):
            name, eq, inline = value.partition("=")
            if not eq and name in long_values and i + 1 < len(args):
                i += 1
                inline = args[i].value or ""
            out.options[name] = inline
        else:
            for j, letter in enumerate(value[1:], start=1):
                if letter in short_values or letter in attached:
                    inline = value[j + 1 :]
                    if not inline and letter not in attached and i + 1 < len(args):
                        i += 1
                        inline = args[i].value or ""
                    out.options["-" + letter] = inline
                    break
                out.options["-" + letter] = ""
        i += 1
    return out


def changes(
    base: str, args: Sequence[Word], fed: tuple[Word, ...] | None, cwd: Path | None
) -> list[Change]:
    """The files `base args...` (plus what xargs feeds it) removes or overwrites, run in
    `cwd` (which tells whether a destination is an existing directory)."""
    extra = list(fed or ())
    if base == "unlink":
        return [Change(w, "unlink deletes", False) for w in [*args, *extra]]
    if base == "link":  # `link FILE1 FILE2`: a hard link, as `ln` makes
        named = [*_argv(args).operands, *extra]
        if not named:
            return []
        return [Change(named[0], "link gives a second name (a hard link) to", True)] + [
            Change(w, "link makes a link at", False) for w in named[1:2]
        ]
    if base == "shred":
        argv = _argv(args, "ns", ["--iterations", "--size", "--random-source"])
        return [Change(w, "shred destroys", True) for w in [*argv.operands, *extra]]
    if base == "truncate":
        argv = _argv(args, "sr", ["--size", "--reference"])
        size = argv.get("-s") or argv.get("--size")
        how = "truncate empties" if size in ("0", "=0") else "truncate rewrites"
        return [Change(w, how, True) for w in [*argv.operands, *extra]]
    if base == "tee":
        argv = _argv(args)
        how = "tee appends to" if argv.has("-a", "--append") else "tee overwrites"
        return [Change(w, how, True) for w in argv.operands]
    if base in ("cp", "mv", "install", "ln"):
        return _copy_like(base, args, extra, cwd)
    if base == "rsync":
        return _rsync(args, cwd)
    if base == "sed":
        return _sed(args)
    return []


_COPY_SHORT = {"cp": "tS", "mv": "tS", "install": "tSmog", "ln": "tS"}
_COPY_LONG = ("--target-directory", "--suffix", "--mode", "--owner", "--group")


def _copy_like(base: str, args: Sequence[Word], fed: list[Word], cwd: Path | None) -> list[Change]:
    argv = _argv(args, _COPY_SHORT[base], _COPY_LONG)
    operands = [*argv.operands, *fed]
    if base == "install" and argv.has("-d", "--directory"):
        return [Change(w, "install creates", True) for w in operands]
    verb = {"cp": "cp writes", "mv": "mv writes", "install": "install writes",
            "ln": "ln makes a link at"}[base]  # fmt: skip
    follow = base != "ln"
    found: list[Change] = []
    if fed and not argv.has("-t", "--target-directory"):
        # xargs appends its items: any of them may end up as the destination.
        found += [Change(w, verb, follow) for w in fed]
    # A hard link is the same file under a second name: every later write through it,
    # an edit or a `>>` that names only the workspace, changes the source too.
    hard = (base == "ln" and not argv.has("-s", "--symbolic")) or (
        base == "cp" and argv.has("-l", "--link")
    )
    for source, landing in _landings(argv, operands, cwd, base):
        if hard:
            found.append(Change(source, f"{base} gives a second name (a hard link) to", True))
        if base == "mv":
            found.append(Change(source, "mv moves", False))
        if landing is not None:
            found.append(Change(landing, verb, follow))
    return found


def links(args: Sequence[Word], cwd: Path | None, base: str = "ln") -> list[tuple[Path, Path]]:
    """The (link, target) pairs `base args...` (ln, or cp with `-s`) makes, as far as
    its words are known."""
    argv = _argv(args, _COPY_SHORT[base], _COPY_LONG)
    symbolic = _symbolic(base, argv)
    if base != "ln" and not symbolic:
        return []
    found = []
    for source, landing in _landings(argv, argv.operands, cwd, base):
        link = None if landing is None or landing.value is None else join_path(cwd, landing.value)
        if link is None or source.value is None:
            continue
        target = join_path(link.parent if symbolic else cwd, source.value)
        if target is not None:
            found.append((link, target))
    return found


def makes_links(base: str, args: Sequence[Word]) -> bool:
    """Whether `base args...` is ln or a `cp -s` (`--symbolic-link`)."""
    return base == "ln" or (base == "cp" and _symbolic(base, _argv(args, _COPY_SHORT[base])))


def lands_unknown(base: str, args: Sequence[Word]) -> bool:
    """Whether where cp, mv, install or ln puts what it copies is only known at run
    time (`cp x "$D"`, `cp -t "$D" x`)."""
    argv = _argv(args, _COPY_SHORT[base], _COPY_LONG)
    if argv.has("-t", "--target-directory"):
        return not (argv.get("-t") or argv.get("--target-directory"))
    operands = argv.operands
    return len(operands) > 1 and (operands[-1].value is None or operands[-1].glob)


def _symbolic(base: str, argv: _Argv) -> bool:
    if base == "cp":
        return argv.has("-s", "--symbolic-link")
    return base == "ln" and argv.has("-s", "--symbolic")


def _landings(
    argv: _Argv, operands: list[Word], cwd: Path | None, base: str
) -> list[tuple[Word, Word | None]]:
    """Each source of cp/mv/install/ln and the path it lands at (None: unknown)."""
    target = argv.get("-t") or argv.get("--target-directory")
    if target is not None:
        return [(s, _child(Word(target, target), s)) for s in operands]
    if len(operands) < 2:
        # `ln -s ../a` links ./a; cp or mv with one operand fails
        return [(s, _child(Word(".", "."), s)) for s in operands] if base == "ln" else []
    *sources, dest = operands
    if dest.value is None:
        return [(s, None) for s in sources]
    into = len(sources) > 1 or dest.value.endswith("/")
    if not (into or argv.has("-T", "--no-target-directory", "-n", "--no-dereference")):
        into = _is_dir(cwd, dest.value)
    return [(s, _child(dest, s) if into else dest) for s in sources]


def _is_dir(cwd: Path | None, value: str) -> bool:
    path = join_path(cwd, value)
    return path is not None and path.is_dir()


def _child(directory: Word, source: Word) -> Word:
    """Where `source` lands inside `directory`; its name does not matter for the judgement,
    only which directory it lands in, so an unknown name is a placeholder."""
    assert directory.value is not None
    name = PurePosixPath(source.value).name if source.value and not source.glob else "_"
    return Word(directory.text, os.path.join(directory.value, name or "_"))


_RSYNC_LONG = (
    "--rsh", "--exclude", "--include", "--filter", "--files-from", "--exclude-from",
    "--include-from", "--log-file", "--password-file", "--temp-dir", "--backup-dir",
    "--partial-dir", "--compare-dest", "--copy-dest", "--link-dest", "--port", "--chmod",
    "--chown", "--suffix", "--timeout", "--bwlimit", "--max-size", "--min-size",
    "--out-format", "--rsync-path", "--iconv", "--block-size",
)  # fmt: skip


def _rsync(args: Sequence[Word], cwd: Path | None) -> list[Change]:
    argv = _argv(args, "efTBM", _RSYNC_LONG)
    if len(argv.operands) < 2:
        return []
    *sources, dest = argv.operands
    value = dest.value
    if value is None or value.startswith("rsync://") or ":" in value.split("/", 1)[0]:
        return []  # another machine's files
    if _is_dir(cwd, value) and not value.endswith("/"):
        return [Change(_child(dest, s), "rsync writes", True) for s in sources]
    return [Change(dest, "rsync writes", True)]


def _sed(args: Sequence[Word]) -> list[Change]:
    argv = _argv(args, "efl", ["--expression", "--file", "--line-length"], attached="i")
    if not argv.has("-i", "--in-place"):
        return []
    files = argv.operands
    if not argv.has("-e", "--expression", "-f", "--file"):
        files = files[1:]  # the first operand is the script
    return [Change(w, "sed -i rewrites", False) for w in files]


# A landing: a file a command writes whole, and the file whose content it then holds
# (None: text the guard cannot know).
Landing = tuple[Path, Path | None]

_PATCH_SHORT = "iopdrDFVYBz"
_PATCH_LONG = ("--input", "--output", "--strip", "--directory", "--reject-file",
               "--ifdef", "--fuzz", "--version-control", "--basename-prefix",
               "--prefix", "--suffix", "--quoting-style", "--get")  # fmt: skip


def landings(
    base: str, args: Sequence[Word], fed: tuple[Word, ...] | None, cwd: Path | None
) -> list[Landing]:
    """What each file `base args...` writes whole will hold, for a script run later in
    the same command line: the file it copies, moves or links there (cp, mv, install,
    ln, link, rsync), or None (sed -i, dd of=, patch, truncate, shred, git checkout or
    restore of paths). A destination folder stands for every file it receives: a file
    under it holds what is under the source. Paths only run time knows are left out."""
    extra = list(fed or ())
    if base in ("cp", "mv", "install", "ln", "link"):
        return _copied(base, args, extra, cwd)
    if base == "rsync":
        return _rsynced(args, cwd)
    if base == "dd":
        named = [Word(w.text, w.value[3:]) for w in args if (w.value or "").startswith("of=")]
    elif base == "patch":
        named = _patched(args)
    elif base == "git":
        named, cwd = _checked_out(args, cwd)
    elif base in ("sed", "truncate", "shred"):
        named = [change.word for change in changes(base, args, fed, cwd)]
    else:
        return []
    return [(path, None) for path in _paths(named, cwd)]


def _copied(base: str, args: Sequence[Word], fed: list[Word], cwd: Path | None) -> list[Landing]:
    if base == "link":
        operands = [*_argv(args).operands, *fed]
        pairs = [(operands[0], operands[1])] if len(operands) > 1 else []
        symbolic = False
    else:
        argv = _argv(args, _COPY_SHORT[base], _COPY_LONG)
        if base == "install" and argv.has("-d", "--directory"):
            return []
        pairs = _landings(argv, [*argv.operands, *fed], cwd, base)
        symbolic = _symbolic(base, argv)
    found: list[Landing] = []
    for source, landing in pairs:
        target = None if landing is None or landing.value is None else join_path(cwd, landing.value)
        if target is None:
            continue
        if source.value is None or source.glob:
            # `cp *.sh d/`: any file it matches, under any name in d.
            found.append((target.parent if target.name == "_" else target, None))
            continue
        found.append((target, join_path(target.parent if symbolic else cwd, source.value)))
    return found


def _rsynced(args: Sequence[Word], cwd: Path | None) -> list[Landing]:
    argv = _argv(args, "efTBM", _RSYNC_LONG)
    if len(argv.operands) < 2:
        return []
    *sources, dest = argv.operands
    if dest.value is None or dest.value.startswith("rsync://") or ":" in dest.value.split("/")[0]:
        return []
    into = len(sources) > 1 or _is_dir(cwd, dest.value)
    found: list[Landing] = []
    for source in sources:
        landing = _child(dest, source) if into and not dest.value.endswith("/") else dest
        target = join_path(cwd, landing.value or "")
        if target is None:
            continue
        known = source.value is not None and not source.glob and ":" not in source.value
        found.append((target, join_path(cwd, source.value or "") if known else None))
    return found


def _patched(args: Sequence[Word]) -> list[Word]:
    """The files `patch` is told to change: its first operand and `-o FILE`. A patch
    that names its files itself (`patch -p1 < fix.diff`) is not followed."""
    argv = _argv(args, _PATCH_SHORT, _PATCH_LONG)
    named = argv.operands[:1]
    output = argv.get("-o") or argv.get("--output")
    if output:
        named.append(Word(output, output))
    return named


_GIT_VALUE_OPTIONS = frozenset({"-C", "-c", "--git-dir", "--work-tree", "--namespace"})


def _checked_out(args: Sequence[Word], cwd: Path | None) -> tuple[list[Word], Path | None]:
    """The paths `git checkout`/`git restore` set back (every operand: the first may be a
    branch), and where git runs (`git -C dir`)."""
    i = 0
    while i < len(args) and (value := args[i].value or "").startswith("-"):
        if value in _GIT_VALUE_OPTIONS and i + 1 < len(args):
            if value == "-C":
                cwd = join_path(cwd, args[i + 1].value or "") if args[i + 1].value else None
            i += 1
        i += 1
    if i >= len(args) or args[i].value not in ("checkout", "restore"):
        return [], cwd
    rest = list(args[i + 1 :])
    values = [w.value for w in rest]
    if "--" in values:
        rest = rest[values.index("--") + 1 :]
    return [w for w in rest if not (w.value or "").startswith("-")], cwd


def _paths(words: Sequence[Word], cwd: Path | None) -> list[Path]:
    found = []
    for word in words:
        path = None if word.value is None else join_path(cwd, word.value)
        if path is not None:
            found.append(path)
    return found
