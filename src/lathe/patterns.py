"""Path patterns in one dialect: .gitignore's, as `pathspec` implements it (and ripgrep).

Every place that asks "does this rule cover this path" asks here: the policy gate, the
sandbox's masks and read-only mounts, the search tools, the prompt's file snapshot. So
`--deny 'read(.env)'` means the same for `read`, `grep`, and `cat sub/.env` in bash.

The rules, as in a .gitignore file, for paths relative to the workspace root:
- a pattern without a slash except at its end matches a name at any depth: `.env`,
  `*.pem`, `secrets/` (a trailing slash: directories only);
- any other slash anchors it at the root: `/top.txt`, `src/*.key`, `docs/**/*.md`;
- `*` and `?` stay within one path segment, `**` crosses directories;
- a match on a directory covers everything below it.
A pattern is always one rule of its own; `!negation` has no meaning here.
"""

from __future__ import annotations

import functools
import os
import time
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

# Never copied into a prompt unasked (the snapshot, instruction files), even when the
# user set no read rule for them.
SECRET_LIKE = (
    ".env", ".env.*", "*.pem", "*.key", "*.p12", "id_rsa*", "id_ed25519*", ".netrc",
    ".pypirc", ".npmrc", "credentials*",
)  # fmt: skip
_RACY_NS = 2_000_000_000
_MAX_LISTINGS = 200_000


@dataclass
class _Listing:
    """What one folder held when it was last listed: the covered entries, and the
    folders to walk into (with their workspace-relative prefix)."""

    stamp: tuple[int, int, int]  # the folder's inode, mtime and ctime when listed
    matched: list[Path]
    folders: list[tuple[str, str]]


_LISTINGS: dict[tuple[tuple[str, ...], str, str], _Listing] = {}

# Not descended into when looking for matching files: a repository's object store is
# large and holds no file by its name (what history can reveal is policy/history.py's).
_OPAQUE_DIRS = frozenset({".git"})


@functools.lru_cache(maxsize=1024)
def _spec(pattern: str) -> Any:
    from pathspec import GitIgnoreSpec

    return GitIgnoreSpec.from_lines([_literal(pattern)])


def pattern_problem(pattern: str) -> str | None:
    """Why `pattern` is no pattern of this dialect (a range such as `[z-a]`, a lone
    backslash), or None: checked where the user gives one, so that the first path
    matched against it is not where it fails."""
    try:
        _spec(pattern.strip())
    except Exception as exc:  # pathspec raises its own errors and re.error alike
        return str(exc).strip() or type(exc).__name__
    return None


def _literal(pattern: str) -> str:
    """A pattern as one gitignore line of its own: a leading "./" means the workspace
    root (as "/" does), and a leading "!" or "#" is part of the name, never a negation
    or a comment."""
    pattern = pattern.strip()
    if pattern.startswith("./"):
        pattern = "/" + pattern.removeprefix("./").lstrip("/")
    return "\\" + pattern if pattern.startswith(("!", "#")) else pattern


def normalized(relative: str) -> str:
    """A workspace-relative path as patterns see it: POSIX, no "./", no outer slashes."""
    path = relative.replace(os.sep, "/").strip("/")
    while path.startswith("./"):
        path = path[2:]
    return "" if path == "." else path


def path_matches(relative: str, pattern: str, *, is_dir: bool = False) -> bool:
    """Whether one pattern covers a workspace-relative path (`is_dir`: it names a folder)."""
    path = normalized(relative)
    if not path or not pattern.strip():
        return False
    return bool(_spec(pattern.strip()).match_file(path + "/" if is_dir else path))


@functools.lru_cache(maxsize=64)
def compiled(patterns: tuple[str, ...]) -> PathPatterns:
    """The PathPatterns for a set of patterns, made once: rules are matched on every
    tool call, and building the spec compiles a regular expression per pattern."""
    return PathPatterns(patterns)


class PathPatterns:
    """An ordered set of patterns; a path is covered when any one of them matches."""

    def __init__(self, patterns: Iterable[str] = ()) -> None:
        self.patterns = tuple(dict.fromkeys(p.strip() for p in patterns if p and p.strip()))
        self._combined: Any = None

    def __bool__(self) -> bool:
        return bool(self.patterns)

    def first_match(self, relative: str, *, is_dir: bool = False) -> str | None:
        """The first pattern that covers `relative`, for a message naming the rule."""
        return next((p for p in self.patterns if path_matches(relative, p, is_dir=is_dir)), None)

    def matches(self, relative: str, *, is_dir: bool = False) -> bool:
        path = normalized(relative)
        if not path or not self.patterns:
            return False
        return bool(self._spec().match_file(path + "/" if is_dir else path))

    def existing(self, root: Path) -> list[Path]:
        """The files and folders under `root` that a pattern covers now, outermost only
        (a covered folder stands for everything in it).

        Called when every sandboxed command starts, so a folder is listed again only
        when its mtime or ctime (which change when an entry is added, removed or
        renamed) moved since the last call: a large, unchanged tree costs one stat a
        folder."""
        if not self.patterns:
            return []
        found: list[Path] = []
        pending = [("", str(root))]
        now_ns = time.time_ns()
        while pending:
            prefix, folder = pending.pop()
            listing = self._listing(prefix, folder, now_ns)
            if listing is not None:
                found.extend(listing.matched)
                pending.extend(listing.folders)
        return sorted(found)

    def _listing(self, prefix: str, folder: str, now_ns: int) -> _Listing | None:
        try:
            info = os.stat(folder)
        except OSError:
            return None
        # ctime too: a command can set an old mtime back (touch -d), never a ctime.
        stamp = (info.st_ino, info.st_mtime_ns, info.st_ctime_ns)
        key = (self.patterns, prefix, folder)
        cached = _LISTINGS.get(key)
        if cached is not None and cached.stamp == stamp:
            return cached
        try:
            entries = list(os.scandir(folder))
        except OSError:
            return None
        spec = self._spec()
        listing = _Listing(stamp, [], [])
        links = False  # a link's target can change with no stamp of this folder moving
        for entry in entries:
            try:
                is_dir = entry.is_dir(follow_symlinks=False)
                # A link to a folder is that folder to whoever follows it: `ln -s v
                # .vscode` escaped `.vscode/` (never walked into, only matched).
                is_link = not is_dir and entry.is_symlink()
                leads_to_dir = is_link and entry.is_dir()
            except OSError:
                continue
            links = links or is_link
            relative = prefix + entry.name
            as_dir = is_dir or leads_to_dir
            if spec.match_file(relative + "/" if as_dir else relative) or (
                leads_to_dir and spec.match_file(relative)
            ):
                listing.matched.append(Path(entry.path))
            elif is_dir and entry.name not in _OPAQUE_DIRS:
                listing.folders.append((relative + "/", entry.path))
        # A folder changed within the clock's coarseness could change again unseen
        # under the same mtime: such a listing is used once, not kept.
        if not links and now_ns - max(info.st_mtime_ns, info.st_ctime_ns) > _RACY_NS:
            if len(_LISTINGS) > _MAX_LISTINGS:
                _LISTINGS.clear()
            _LISTINGS[key] = listing
        return listing

    def _spec(self) -> Any:
        if self._combined is None:
            from pathspec import GitIgnoreSpec

            # One spec for all: each pattern is a rule of its own, so none may negate.
            self._combined = GitIgnoreSpec.from_lines(_literal(p) for p in self.patterns)
        return self._combined
