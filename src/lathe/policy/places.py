"""Where a path lies, for the guard: in the workspace, in a temp directory, in the home
directory, on a system path, or elsewhere outside the workspace.

The guard's one principle for files: a command may delete or overwrite what is inside
the workspace or inside a temp directory (/tmp, /var/tmp, /dev/shm, $TMPDIR), and nothing
else. The home directory is never temp, even when it lies under /tmp (as in tests), and
a temp directory itself, or everything in it (`/tmp/*`), is not "inside" it.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from lathe.policy.dirs import join_path
from lathe.policy.shell_words import Word

Decision = Literal["deny", "ask", "allow"]

_HARMLESS_DEVICES = frozenset(
    {"/dev/null", "/dev/zero", "/dev/full", "/dev/random", "/dev/urandom", "/dev/tty",
     "/dev/stdin", "/dev/stdout", "/dev/stderr"}
)  # fmt: skip
SYSTEM_ROOTS = tuple(
    Path(p)
    for p in ("/bin", "/boot", "/dev", "/etc", "/lib", "/lib32", "/lib64", "/libx32", "/opt",
              "/proc", "/run", "/sbin", "/srv", "/sys", "/usr", "/var")
)  # fmt: skip
_TEMP_ROOTS = ("/tmp", "/var/tmp", "/dev/shm")
_GLOB = frozenset("*?[")


@dataclass(frozen=True)
class Finding:
    decision: Decision
    reason: str


@dataclass(frozen=True)
class FindPick:
    """The paths a find hands to `-delete` or to a command it runs on `{}`: those it
    selects at or beneath `root` (which may hold a glob: `find t* -delete`), and with
    `below` everything beneath a folder it selects (`-exec rm -rf {} +`). Which it
    selects, its tests say (`carried.find_selection`)."""

    root: Path
    below: bool


UNKNOWN_FOLDER = "a folder only known at run time, which may be the home directory"


def in_unknown_folder(word: Word, cwd: Path | None) -> bool:
    """Whether `word` names a path relative to a folder only run time knows."""
    return cwd is None and word.value is not None and not word.value.startswith("/")


class Places:
    def __init__(self, workspace: Path, home: Path, environ: Mapping[str, str]) -> None:
        self.workspace = workspace
        self.real_workspace = Path(os.path.realpath(workspace))
        self.home = home
        roots = [Path(p) for p in _TEMP_ROOTS]
        tmpdir = environ.get("TMPDIR", "")
        if tmpdir.startswith("/"):
            custom = Path(os.path.normpath(tmpdir))
            # A TMPDIR that holds the home or the workspace would make them "temp".
            if not (home.is_relative_to(custom) or workspace.is_relative_to(custom)):
                roots.append(custom)
        self.links: dict[Path, Path] = {}
        # Every path a change or deletion was judged for, as named (a glob kept whole:
        # `/ws/*/build`): the gate judges them by the rules, and asks about protected
        # ones where no sandbox keeps them; and what finds delete or hand on to be changed.
        self.changed: list[Path] = []
        self.picked: list[FindPick] = []
        self.temp_roots = tuple(
            dict.fromkeys([*roots, *(Path(os.path.realpath(r)) for r in roots)])
        )

    def link(self, link: Path, target: Path) -> None:
        """The command line makes `link` point at `target` (`ln -s ~ h; rm -rf h/`): it
        does not exist yet when the guard decides, so it is remembered."""
        self.links[link] = target

    def real(self, path: Path) -> Path:
        """`path` with symlinks resolved, those on disk and those the command makes."""
        real = Path(os.path.realpath(path))
        for _ in range(8):  # a loop of links ends somewhere
            through = next(
                ((link, p) for link in self.links for p in (path, real) if p.is_relative_to(link)),
                None,
            )
            if through is None:
                break
            link, spelled = through
            path = self.links[link] / spelled.relative_to(link)
            real = Path(os.path.realpath(path))
        return real

    def path(self, word: Word, cwd: Path | None) -> tuple[Path | None, str | None]:
        """The path a word names and, for a glob, the first component holding a wildcard
        (the path is then the directory above it: `/tmp/x-*` is /tmp with "x-*")."""
        if word.value is None:
            return None, None
        path = join_path(cwd, word.value)
        if path is None or not word.glob:
            return path, None
        fixed: list[str] = []
        for part in path.parts:
            if set(part) & _GLOB:
                return Path(*fixed), part
            fixed.append(part)
        return path, None

    def inside(self, path: Path, *, follow: bool = False) -> bool:
        """In the workspace. A symlinked directory inside it may lead out; with `follow`,
        so may the final component (a write goes through a link, unlink does not)."""
        if path == self.workspace:
            return True
        if not path.is_relative_to(self.workspace):
            return False
        real = self.real(path) if follow else self.real(path.parent)
        return real.is_relative_to(self.real_workspace)

    def is_system(self, path: Path) -> bool:
        if path.is_relative_to(self.workspace):
            return False
        if path in (Path("/"), Path("/home"), Path("/root"), self.home):
            return True
        return any(path.is_relative_to(root) for root in SYSTEM_ROOTS)

    def deletion(
        self, how: str, word: Word, cwd: Path | None, *, from_file: bool = False
    ) -> Finding:
        """Judge a recursive deletion (`rm -r`, `find -delete`, `shutil.rmtree`) of `word`.
        One in a script on disk (`from_file`) is refused only where its folder is known
        to be dangerous: a folder only run time knows there is judged as before the guard
        followed each folder, or no ordinary script (`cd "$d" && rm -rf build`) runs."""
        shown = word.text
        path, pattern = self.path(word, cwd)
        if path is None:
            lost = None if from_file else self.lost(how, word, cwd)
            return lost or Finding("ask", f"{how} on {shown}, a path only known at run time")
        self._note_change(how, word, cwd)
        if path == self.workspace and pattern is None:
            return Finding("ask", f"{how} on {shown} deletes the whole workspace")
        # A trailing `/`, or a glob below the folder, goes through a link there.
        through = (word.value or "").endswith("/") or pattern is not None
        where = self.deleted_where(path, pattern, follow=through)
        if where is None:
            inside = self.inside(path)
            return Finding("allow", f"{how} on {shown} (inside the workspace)" if inside else
                                    f"{how} on {shown} (in a temp directory)")  # fmt: skip
        return Finding("deny", f"{how} on {shown} ({where})")

    @staticmethod
    def lost(how: str, word: Word, cwd: Path | None) -> Finding | None:
        """A recursive deletion of a path relative to a folder only run time knows (`cd
        "$X"; rm -rf *`): refused, since it may be the home folder and `--approval full`
        never asks."""
        if not in_unknown_folder(word, cwd):
            return None
        return Finding(
            "deny", f"{how} on {word.text} in {UNKNOWN_FOLDER} (name the folder in full)"
        )

    def deleted_where(self, path: Path, pattern: str | None, *, follow: bool) -> str | None:
        """Why deleting the tree at `path` is refused, or None. `follow`: it was named
        with a trailing `/`, so rm goes through a symlink there."""
        if path == Path("/"):
            return "the filesystem root, outside the workspace"
        if path == self.home or self.home.is_relative_to(path):
            return f"the home directory {self.home}"
        if self.inside(path, follow=follow):
            return None
        return self.outside(path, pattern, follow=follow)

    def _note_change(self, how: str, word: Word, cwd: Path | None) -> None:
        """Remember the path `word` names as changed (`how`), a glob whole, or as what a
        find picks when it is a find's (`find . -delete`, `{}` in `find -exec rm`): its
        root's `./*` stands for every path the find selects, dotfiles and depth included,
        not for what bash would expand it to."""
        path = None if word.value is None else join_path(cwd, word.value)
        if path is None:
            return
        if _picked_by_find(how, word):
            self.picked.append(FindPick(path.parent, below=not how.startswith("find -delete")))
            return
        self.changed.append(path)
        if not word.glob and set(str(path.parent)) & _GLOB:
            self.changed += _into_globbed_folders(path)

    def change(self, how: str, word: Word, cwd: Path | None, *, follow: bool) -> Finding | None:
        """Judge removing, overwriting or creating the file `word` names: deny when it is
        outside the workspace and the temp directories. `follow`: the change goes through
        a symlink at the path (a write) rather than replacing it (unlink, rename)."""
        path, pattern = self.path(word, cwd)
        if path is None:
            return None
        self._note_change(how, word, cwd)
        if follow and is_device(path):
            return Finding("deny", f"{how} the device {path}: {word.text}")
        if follow and str(path).startswith("/dev/"):
            return None  # /dev/null, /dev/stdout, /dev/fd/N, ...
        if self.inside(path, follow=follow):
            return None
        where = self.outside(path, pattern, follow=follow)
        return None if where is None else Finding("deny", f"{how} {word.text} ({where})")

    def outside(self, path: Path, pattern: str | None, *, follow: bool) -> str | None:
        """Why a path outside the workspace may not be changed; None for a temp path."""
        shown = f"{path}/{pattern}" if pattern else str(path)
        if path == self.home:
            return f"the home directory {path}"
        if self.home.is_relative_to(path):
            return f"{path}, which holds the home directory"
        if self.workspace.is_relative_to(path):
            return f"{path}, which holds the workspace"
        real = self.real(path) if follow else self.real(path.parent) / path.name
        if path.is_relative_to(self.workspace):
            return f"{shown}, a link out of the workspace to {real}"
        if self._in_temp(path, pattern):
            if real == path or self._in_temp(real, pattern):
                return None
            return f"{shown}, a link to {real}"
        if self.is_system(path) and not path.is_relative_to(self.home):
            return f"{shown}, a system path"
        return f"{shown}, outside the workspace"

    def _in_temp(self, path: Path, pattern: str | None) -> bool:
        if path.is_relative_to(self.home):
            return False
        for root in self.temp_roots:
            if path != root and path.is_relative_to(root):
                return True
            # `/tmp/lathe-*` names some entries of /tmp; `/tmp/*` or `/tmp/.*` all of them.
            if path == root and pattern is not None and set(pattern) - _GLOB - set(".]"):
                return True
        return False


def _into_globbed_folders(path: Path) -> list[Path]:
    """Where a file lands that a command puts into a folder named by a glob: `cp a.py
    t*/` (its landing `t*/a.py`, which no glob matches before it exists) writes
    tests/a.py. Each folder the folder part matches (no dotfiles, as bash's `*`; at
    most 1,000: `carried.glob_targets`), with the name added."""
    from lathe.policy.carried import glob_targets

    return [folder / path.name for folder in glob_targets(path.parent) if folder.is_dir()]


def _picked_by_find(how: str, word: Word) -> bool:
    """Whether `word`, changed `how`, is a find's `streams.under` root (`./*`): the one
    `find -delete` deletes, or the `{}` of a command `find -exec` runs (there no shell
    expands a glob, so any other word is a name as written)."""
    if not word.glob or not (word.value or "").endswith("/*"):
        return False
    return how.startswith("find -delete") or ("(via find -exec)" in how and "{}" in word.text)


def is_device(path: Path) -> bool:
    text = str(path)
    if not text.startswith("/dev/") or text in _HARMLESS_DEVICES:
        return False
    return not text.startswith(("/dev/fd/", "/dev/pts/", "/dev/shm/"))
