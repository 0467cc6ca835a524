"""What a killed lathe's children left: their folders, saved as patches by a later run.

A child's folder goes when the child ends, once its changes are saved (landed, or kept
as a patch file). A lathe killed with -9 removes nothing: its children's folders stayed
under `worktrees/` for good, their work in them and nobody told. Each folder's lathe
holds its owner lock (`worktree.owner_file`) while it lives and the kernel drops it when
it dies, so a later run in the workspace tells the folders whose lathe has ended
(`worktree.claim_orphans`) from those of one still at work; `save_orphans` keeps each
one's changes as `patches/<id>.patch`, never applied (the user decides), and removes
the folder, or leaves it to the user when its changes cannot be read back
(`worktree.keep_for_user`: said once, not on every run).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from lathe.errors import LatheError
from lathe.subagents.result import one_line
from lathe.subagents.worktree import (
    child_changes,
    claim_orphans,
    keep_for_user,
    keep_patch,
    remove_worktree,
)


@dataclass(frozen=True)
class Orphan:
    """A folder a killed lathe's child left, now saved: `name` is the child's id (its
    session's), `patch_file` holds its changes (None: it had changed nothing a patch
    carries), `left_behind` the files no patch carries. `kept`, when set, says why its
    changes could not be saved: its folder, `path`, then stays."""

    name: str
    path: Path
    patch_file: Path | None = None
    left_behind: tuple[str, ...] = ()
    kept: str = ""


def save_orphans(workspace: Path, home: Path, patches: Path) -> list[Orphan]:
    """Every folder a killed lathe's child left for `workspace` (each child's own
    children's listed after it), its changes written to `patches/<id>.patch` and the
    folder removed; the folders of a lathe still at work are left alone. Costs one
    look at a folder when there are none."""
    saved: list[Orphan] = []
    for tree in claim_orphans(workspace, home):
        assert tree.owner is not None
        name = tree.path.name
        try:
            changes = child_changes(tree)
            patch_file = keep_patch(patches, name, changes.patch)
        except (LatheError, OSError) as exc:  # its folder still holds the work: kept
            saved.append(Orphan(name, tree.path, kept=one_line(str(exc))))
            saved += save_orphans(tree.path, home, patches)
            keep_for_user(tree)  # told once: later runs leave it to the user
            continue
        saved.append(Orphan(name, tree.path, patch_file, changes.left_behind))
        saved += save_orphans(tree.path, home, patches)  # while its folder, their source, is there
        remove_worktree(tree)
    return saved
