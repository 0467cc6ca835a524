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
from collections.abc import Sequence
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


def carries(command: SimpleCommand) -> bool:
    """Whether `command` puts what the folders it names hold under another name."""
    name = PurePosixPath(command.name).name
    if name == "git":
        return _git_subcommand(command.words[1:]) in _GIT_CARRIERS
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


def named_paths(base: Path, word: Word) -> list[Path]:
    """The paths `word` names, from `base`: a glob word, what it matches (at most
    `_GLOB_LIMIT`) and itself as written."""
    value = os.path.expanduser(word.value or "")
    named = [base / value]
    if word.glob:
        matches = glob.iglob(value, root_dir=base, include_hidden=True)
        named += [base / match for match in itertools.islice(matches, _GLOB_LIMIT)]
    return named


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
