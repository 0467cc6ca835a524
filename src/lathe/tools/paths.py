"""Turn a path the model wrote into a real path inside the workspace, or refuse it.

Relative paths are taken from the workspace root. `..` and symlinks are resolved
before the check, so neither can lead outside. A path that does not exist yet (a file
`write` will create) is resolved as far as it exists and checked the same way.
"""

from __future__ import annotations

import difflib
import os
import stat
from collections.abc import Sequence
from pathlib import Path, PurePosixPath
from typing import TYPE_CHECKING

from lathe.errors import ToolError

if TYPE_CHECKING:
    from lathe.tools.base import ToolContext


def resolve_path(workspace: Path, path: str, *, extra_roots: Sequence[Path] = ()) -> Path:
    """The real path of `path`; raises ToolError unless it lies inside the workspace
    (or inside one of `extra_roots`, e.g. the spill directory for read-only tools)."""
    root = Path(os.path.realpath(workspace))
    given = path.strip() or "."
    try:
        candidate = Path(os.path.expanduser(given))
        if not candidate.is_absolute():
            candidate = root / candidate
        resolved = Path(os.path.realpath(candidate))
    except (ValueError, OSError) as exc:  # e.g. an embedded NUL byte
        raise ToolError(f"{given!r} is not a valid path: {exc}") from exc
    for allowed in (root, *(Path(os.path.realpath(r)) for r in extra_roots)):
        if resolved.is_relative_to(allowed):
            return resolved
    via = "" if resolved == Path(os.path.normpath(candidate)) else f" (it resolves to {resolved})"
    raise ToolError(
        f"{given} is outside the workspace {root}{via}; file tools can only touch files "
        f"inside it. Use a path relative to the workspace."
    )


def existing_path(ctx: ToolContext, path: str | None) -> tuple[Path, str]:
    """For a tool that only looks: the resolved path (the workspace or the spill
    directory) and how it is shown; ToolError naming near matches when it is missing."""
    resolved = resolve_path(ctx.workspace, path or ".", extra_roots=(ctx.spill_dir,))
    shown = display_path(ctx.workspace, resolved)
    if not resolved.exists():
        raise not_found(resolved, shown)
    refuse_special(resolved, shown)
    return resolved, shown


_SPECIAL_KINDS = (
    (stat.S_ISFIFO, "a named pipe (FIFO)"),
    (stat.S_ISSOCK, "a socket"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
)


def refuse_special(path: Path, shown: str) -> None:
    """ToolError for anything but a regular file or a folder: opening a named pipe
    blocks until someone writes to it, and a device can be endless."""
    try:
        mode = path.stat().st_mode
    except OSError:
        return  # missing: the caller says so in its own words
    for test, kind in _SPECIAL_KINDS:
        if test(mode):
            raise ToolError(
                f"{shown} is {kind}, not a regular file; file tools do not open it "
                "(reading it could wait forever)"
            )


def display_path(workspace: Path, path: Path) -> str:
    """How a resolved path is shown to the model: relative to the workspace when inside."""
    root = Path(os.path.realpath(workspace))
    if path == root:
        return "."
    if path.is_relative_to(root):
        return path.relative_to(root).as_posix()
    return str(path)


def place(shown: str) -> str:
    """A displayed path as words in a sentence: "." reads as the workspace."""
    return "the workspace" if shown == "." else shown


def not_found(path: Path, shown: str) -> ToolError:
    """The error for a missing path, suggesting near names from its directory, else
    files of the same name elsewhere in the workspace (models often guess the folder)."""
    try:
        names = [entry.name for entry in os.scandir(path.parent)]
    except OSError:
        names = []
    close = difflib.get_close_matches(path.name, names, n=3, cutoff=0.6)
    if close:
        parent = PurePosixPath(shown).parent
        options = ", ".join(str(parent / name) for name in close)
        return ToolError(f"{shown} does not exist. Did you mean: {options}?")
    elsewhere = _same_name_elsewhere(path, shown)
    if elsewhere:
        return ToolError(f"{shown} does not exist. Files with that name: {', '.join(elsewhere)}.")
    return ToolError(f"{shown} does not exist. Use ls or glob to find the right path.")


_SKIP_DIRS = {".git", ".lathe", "node_modules", "__pycache__", ".venv", "venv", ".tox"}


def _same_name_elsewhere(path: Path, shown: str, limit: int = 5, budget: int = 5000) -> list[str]:
    """Workspace-relative paths of files named like `path`, found by a bounded walk."""
    shown_parts = PurePosixPath(shown).parts
    if not shown_parts or PurePosixPath(shown).is_absolute() or len(shown_parts) > len(path.parts):
        return []
    root = Path(*path.parts[: len(path.parts) - len(shown_parts)])
    found: list[str] = []
    seen = 0
    for folder, dirs, files in os.walk(root):
        dirs[:] = [d for d in dirs if d not in _SKIP_DIRS and not d.startswith(".")]
        seen += len(files) + len(dirs)
        found += [
            str(PurePosixPath(Path(folder, f).relative_to(root))) for f in files if f == path.name
        ]
        if len(found) >= limit or seen > budget:
            break
    return found[:limit]
