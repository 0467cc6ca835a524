"""Bring workspace files back to a recorded tree, leaving the user's own changes alone."""

from __future__ import annotations

import os
from pathlib import Path, PurePosixPath

from lathe.checkpoint.model import RestoreReport
from lathe.checkpoint.shadow import Change, ShadowRepo


def plan_restore(
    report: RestoreReport, changes: list[Change], protected: set[str], force: bool
) -> tuple[list[str], list[str]]:
    """Sort `changes` (current tree → target tree) into deletions and writes.

    Fills `kept`, `forced` and `skipped` in the report; returns (deletes, writes).
    """
    deletes: list[str] = []
    writes: list[str] = []
    for change in changes:
        if change.is_nested_repo:
            report.skipped.append(change.path)
            continue
        if change.path in protected:
            if not force:
                report.kept.append(change.path)
                continue
            report.forced.append(change.path)
        match change.status:
            case "deleted":
                deletes.append(change.path)
            case "added":
                writes.append(change.path)
                report.recreated.append(change.path)
            case "modified":
                writes.append(change.path)
                report.restored.append(change.path)
    return deletes, writes


def apply_restore(
    repo: ShadowRepo,
    target_tree: str,
    report: RestoreReport,
    deletes: list[str],
    writes: list[str],
    keep: tuple[str, ...] = (),
) -> None:
    """Delete, prune emptied directories, then write; refusals land in kept or skipped.

    The target's `.gitignore` files are written first, and a file they ignore is not
    deleted: it is missing from the target because it was ignored then, not because it
    did not exist (a turn that rewrote `.gitignore` made `.env` look created by it)."""
    workspace = repo.workspace
    rules = [p for p in writes if PurePosixPath(p).name == ".gitignore" and _writable(workspace, p)]
    if rules and deletes:
        repo.checkout(target_tree, rules)
        writes = [p for p in writes if p not in rules]
        ignored = repo.ignored(deletes)
        deletes = [p for p in deletes if p not in ignored]
        report.skipped.extend(sorted(ignored))
    for path in sorted(deletes, key=_depth, reverse=True):
        if _delete(workspace, path):
            report.deleted.append(path)
        else:
            report.kept.append(path)
    if report.deleted:
        _prune_directories(workspace, report.deleted, repo.directories(target_tree), keep)
    ready = []
    for path in writes:
        if not _writable(workspace, path):
            _withdraw(report, path, report.kept)
        elif path in report.recreated and os.path.lexists(workspace / path):
            # Not in the current snapshot yet on disk: an ignored file, never backed up,
            # so overwriting it could not be undone.
            _withdraw(report, path, report.skipped)
        else:
            ready.append(path)
    if ready:
        repo.checkout(target_tree, ready)
    for names in (report.restored, report.recreated, report.deleted, report.kept, report.skipped):
        names.sort()


def _withdraw(report: RestoreReport, path: str, into: list[str]) -> None:
    (report.restored if path in report.restored else report.recreated).remove(path)
    if path in report.forced:
        report.forced.remove(path)
    into.append(path)


def _depth(path: str) -> int:
    return path.count("/")


def _delete(workspace: Path, path: str) -> bool:
    if not _real_parents(workspace, path):
        return False
    full = workspace / path
    if full.is_symlink() or full.is_file():
        full.unlink()
        return True
    # Already gone counts as done; a directory here means the tree changed under us.
    return not full.exists()


def _prune_directories(
    workspace: Path, deleted: list[str], keep: set[str], kept_folders: tuple[str, ...] = ()
) -> None:
    """Remove the folders the deletions emptied that the target does not hold: neither
    in its tree nor among its folders with no recorded file (`kept_folders`, and what
    is inside them: an empty `logs/` the user had)."""
    candidates = {str(parent) for p in deleted for parent in PurePosixPath(p).parents}
    candidates.discard(".")
    candidates = {
        c for c in candidates if not any(c == f or c.startswith(f + "/") for f in kept_folders)
    }
    for directory in sorted(candidates - keep, key=_depth, reverse=True):
        full = workspace / directory
        if full.is_dir() and not full.is_symlink():
            # A directory that still holds anything (an ignored file, say) is not ours.
            try:
                full.rmdir()
            except OSError:
                continue


def _writable(workspace: Path, path: str) -> bool:
    """False when a parent directory is now a file or symlink we were told to keep."""
    current = workspace
    for part in PurePosixPath(path).parts[:-1]:
        current = current / part
        if current.is_symlink() or (current.exists() and not current.is_dir()):
            return False
    return True


def _real_parents(workspace: Path, path: str) -> bool:
    # Never follow a symlinked directory out of the workspace to delete something.
    current = workspace
    for part in PurePosixPath(path).parts[:-1]:
        current = current / part
        if current.is_symlink() or not current.is_dir():
            return False
    return True
