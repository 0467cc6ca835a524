"""Which paths a command's words name, and whether a command carries what a folder holds
to another name.

A read rule is matched against a path's name, and the sandbox masks the files it
denies only for the one command it runs: `mv deploy d2` took `deploy/prod.env` out of
`read(deploy/prod.env)`'s reach, and the next command, or the `read` tool, showed
`d2/prod.env`. So a command that moves, copies, packs or links (`carries`) a folder
that holds a denied file (`denied_inside`) is refused, as one naming the file is.
"""

from __future__ import annotations

import fnmatch
import glob
import itertools
import os
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from lathe.patterns import compiled
from lathe.policy.shell_parse import SimpleCommand
from lathe.policy.shell_words import Word

# Commands that put what the folders they name hold under other names: moved, copied,
# packed, compressed in place or linked.
CARRIERS = frozenset(
    {"mv", "cp", "rsync", "scp", "tar", "zip", "7z", "7za", "7zr", "rar", "cpio", "pax",
     "ln", "rename", "gzip", "bzip2", "xz", "zstd", "lz4"}
)  # fmt: skip
_GIT_CARRIERS = frozenset({"mv"})
_GLOB_LIMIT = 1_000  # the paths one glob word is taken to name, at most
WALK_LIMIT = 20_000  # the entries of a folder looked at for a denied file, at most
FIND_LIMIT = 200_000  # the entries below a find's root looked at, at most


def carries(command: SimpleCommand) -> bool:
    """Whether `command` puts what the folders it names hold under another name."""
    return carries_words(command.words)


def carries_words(words: Sequence[Word]) -> bool:
    """Whether the command `words` (a find's `-exec cp -r {} d ;`) carries folders."""
    if not words:
        return False
    name = PurePosixPath(words[0].text if words[0].value is None else words[0].value).name
    if name == "git":
        return _git_subcommand(words[1:]) in _GIT_CARRIERS
    return name in CARRIERS


def _git_subcommand(words: Sequence[Word]) -> str | None:
    """git's subcommand, after its own options (`git -C sub mv ...`: "mv")."""
    takes_value = {"-C", "-c", "--git-dir", "--work-tree", "--namespace"}
    pending = False
    for word in words:
        if pending:
            pending = False
            continue
        if word.value is None:
            return None
        if word.value in takes_value:
            pending = True
        elif not word.value.startswith("-"):
            return word.value
    return None


def named_paths(base: Path, word: Word, *, hidden: bool = False) -> list[Path]:
    """The paths `word` names, from `base`: a glob word, what it matches (at most
    `_GLOB_LIMIT`) and itself as written. A wildcard matches a leading dot only with
    `hidden` (bash's dotglob): `*` is not `.env`, `.*` is."""
    value = os.path.expanduser(word.value or "")
    named = [base / value]
    if word.glob:
        matches = glob.iglob(value, root_dir=base, include_hidden=hidden)
        named += [base / match for match in itertools.islice(matches, _GLOB_LIMIT)]
    return named


def glob_targets(path: Path, *, hidden: bool = False) -> list[Path]:
    """The paths a changed glob (`/ws/*/build`) matches on disk, at most `_GLOB_LIMIT`;
    dotfiles only with `hidden` (bash's dotglob)."""
    matches = glob.iglob(str(path), include_hidden=hidden)
    return [Path(match) for match in itertools.islice(matches, _GLOB_LIMIT)]


def could_cover(name: str, patterns: Sequence[str]) -> bool:
    """Whether any of `patterns` could cover a path beneath the workspace folder `name`:
    one without a slash but at its end matches at any depth; an anchored one
    (`tests/**`) only where its leading parts match the folder's."""
    for pattern in patterns:
        parts = pattern.strip().removeprefix("./").strip("/").split("/")
        if len(parts) == 1 and not pattern.strip().startswith(("/", "./")):
            return True
        for part, step in zip(name.split("/"), parts, strict=False):
            if step == "**":
                return True
            if not fnmatch.fnmatchcase(part, step):
                break
        else:
            return True
    return False


def denied_inside(folder: Path, name: str, patterns: Sequence[str]) -> tuple[str | None, bool]:
    """The workspace name of the first path beneath `folder` (named `name` in the
    workspace) that `patterns` deny reading, None if none; and whether every entry was
    looked at (past `WALK_LIMIT` entries it stops: the caller counts that as holding
    one). Links beneath are not followed."""
    matcher = compiled(tuple(patterns))
    seen = 0
    for root, dirs, files in os.walk(folder):
        relative = os.path.relpath(root, folder)
        prefix = name if relative == "." else f"{name}/{Path(relative).as_posix()}"
        for entry, is_dir in itertools.chain(
            ((d, True) for d in dirs), ((f, False) for f in files)
        ):
            seen += 1
            if seen > WALK_LIMIT:
                return None, False
            entry_name = f"{prefix}/{entry}"
            if matcher.matches(entry_name, is_dir=is_dir):
                return entry_name, True
    return None, True


# -- what a find selects ------------------------------------------------------------------

# The operators that join find's tests other than by "and": the tests before an action
# then no longer say which paths reach it.
_FIND_OPERATORS = frozenset({"-o", "-or", "!", "-not", "(", ")", ","})
# Actions that change or hand on the paths selected; the tests before the first one
# choose what every one of them is given.
_FIND_ACTS = frozenset({"-delete", "-exec", "-execdir", "-ok", "-okdir"})
# Words that select nothing away (options, actions that print, `-true`, `-and`).
_FIND_NEUTRAL = frozenset(
    {"-a", "-and", "-depth", "-d", "-xdev", "-mount", "-noleaf", "-ignore_readdir_race",
     "-noignore_readdir_race", "-daystart", "-follow", "-warn", "-nowarn", "-true",
     "-prune", "-print", "-print0", "-ls", "-quit"}
)  # fmt: skip
# Those taking values, and how many (tests judged or not, actions that write a file).
_FIND_VALUES = {
    **dict.fromkeys(
        ("-amin", "-anewer", "-atime", "-cmin", "-cnewer", "-ctime", "-fstype", "-gid",
         "-group", "-ilname", "-inum", "-ipath", "-iregex", "-iwholename", "-links",
         "-lname", "-mmin", "-mtime", "-newer", "-path", "-perm", "-regex", "-samefile",
         "-size", "-uid", "-used", "-user", "-wholename", "-context", "-regextype",
         "-fprint", "-fprint0", "-fls", "-printf", "-files0-from", "-xtype"),
        1,
    ),
    "-fprintf": 2,
}  # fmt: skip
_FIND_PRINTS = frozenset({"-regextype", "-fprint", "-fprint0", "-fls", "-printf", "-fprintf"})


@dataclass(frozen=True)
class FindSelection:
    """Which of the paths below its roots a find hands to its actions (-delete, -exec):
    those whose own name matches every `-name`/`-iname` pattern (case-insensitive:
    True) and whose kind is `-type`'s, between `-mindepth` and `-maxdepth`. `exact`:
    every test before the first action is one of these, joined by "and"; otherwise it
    selects at most these (a test not judged, `-newer f`) or, after `-o`, `!` or a
    parenthesis, any path at all."""

    names: tuple[tuple[str, bool], ...] = ()
    kind: str | None = None  # "f" (not a folder) or "d" (a folder)
    mindepth: int = 0
    maxdepth: int | None = None
    exact: bool = True

    def selects(self, name: str, *, is_dir: bool, depth: int) -> bool:
        """Whether the entry `name` (its last part), `depth` below the root, may be
        selected."""
        if depth < self.mindepth or (self.maxdepth is not None and depth > self.maxdepth):
            return False
        if (self.kind == "f" and is_dir) or (self.kind == "d" and not is_dir):
            return False
        return all(
            fnmatch.fnmatchcase(name.lower(), pattern.lower())
            if folded
            else fnmatch.fnmatchcase(name, pattern)
            for pattern, folded in self.names
        )


EVERYTHING = FindSelection(exact=False)


def find_selection(args: Sequence[Word]) -> FindSelection:
    """What the find whose words after `find` are `args` selects (`FindSelection`)."""
    i = 0
    while i < len(args) and (args[i].value in ("-H", "-L", "-P") or _find_debug(args[i])):
        i += 2 if args[i].value in ("-D", "-O") else 1
    while i < len(args) and not _starts_expression(args[i]):
        i += 1  # a root
    names: list[tuple[str, bool]] = []
    kinds: set[str] = set()
    depth: dict[str, int] = {}
    exact, acted = True, False
    while i < len(args):
        value = args[i].value
        after = [w.value for w in args[i + 1 : i + 3]]
        if value is None or value in _FIND_OPERATORS:
            return EVERYTHING
        if value in _FIND_ACTS:
            acted = True
            i += 1
            while i < len(args) and args[i].value not in (";", "+"):
                i += 1
        elif value in ("-name", "-iname", "-type", "-maxdepth", "-mindepth"):
            given = after[0] if after else None
            if given is None:
                return EVERYTHING
            if value in ("-maxdepth", "-mindepth") and given.isdigit():
                depth[value] = int(given)
            elif acted or value in ("-maxdepth", "-mindepth"):
                pass  # after the first action it narrows only later ones
            elif value == "-type" and given in ("f", "d"):
                kinds.add(given)
            elif value != "-type":
                names.append((given.replace("[^", "[!"), value == "-iname"))
            else:
                exact = False
            i += 1
        elif value in _FIND_VALUES:
            exact = exact and (acted or value in _FIND_PRINTS)
            i += _FIND_VALUES[value]
        elif value not in _FIND_NEUTRAL:
            exact = exact and acted  # a test lathe does not judge, or an unknown word
        i += 1
    if len(kinds) > 1:
        return FindSelection(exact=False)
    return FindSelection(
        tuple(names), next(iter(kinds), None), depth.get("-mindepth", 0),
        depth.get("-maxdepth"), exact,
    )  # fmt: skip


def _find_debug(word: Word) -> bool:
    return (word.value or "").startswith(("-D", "-O"))


def _starts_expression(word: Word) -> bool:
    value = word.value
    return value is not None and (value.startswith("-") or value in ("(", "!", ")"))


def find_hits(
    root: Path,
    name: str,
    selections: Sequence[FindSelection],
    patterns: Sequence[str],
    *,
    below: bool,
) -> Iterator[tuple[str, bool] | None]:
    """Each entry at or beneath the find root `root` (named `name` in the workspace,
    "." for its root) that one of `selections` selects, or that lies beneath a folder one
    selects when `below` (`-exec rm -rf {} +` takes the folder whole), and that one of
    `patterns` covers; then None, and no more, once `FIND_LIMIT` entries were looked
    at. A folder beneath which no pattern could cover a path (`could_cover`) is not
    walked into, nor is a `.git` (its object store holds no file by its
    name), nor a link beneath the root."""
    matcher = compiled(tuple(patterns))
    is_dir = root.is_dir()
    labels = {root.name, PurePosixPath(name).name or name}
    chosen = any(s.selects(label, is_dir=is_dir, depth=0) for s in selections for label in labels)
    if chosen and matcher.matches(name, is_dir=is_dir):
        yield name, is_dir
    if not is_dir:
        return
    deepest = max((1_000 if s.maxdepth is None else s.maxdepth for s in selections), default=0)
    stack = [(root, name, 0, chosen and below)]
    seen = 0
    while stack:
        folder, prefix, depth, inherited = stack.pop()
        try:
            entries = list(os.scandir(folder))
        except OSError:
            continue
        for entry in entries:
            seen += 1
            if seen > FIND_LIMIT:
                yield None
                return
            is_dir = entry.is_dir(follow_symlinks=False)
            entry_name = entry.name if prefix == "." else f"{prefix}/{entry.name}"
            chosen = inherited or any(
                s.selects(entry.name, is_dir=is_dir, depth=depth + 1) for s in selections
            )
            if chosen and matcher.matches(entry_name, is_dir=is_dir):
                yield entry_name, is_dir
            taken = inherited or (chosen and below)
            walk = is_dir and entry.name != ".git" and (taken or depth + 1 < deepest)
            if walk and could_cover(entry_name, patterns):
                stack.append((Path(entry.path), entry_name, depth + 1, taken))
