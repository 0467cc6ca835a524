"""Bring workspace files back to a recorded tree, leaving the user's own changes alone."""

from __future__ import annotations

import os
import secrets
import stat
import tempfile
from pathlib import Path, PurePosixPath

from lathe.checkpoint.model import Modes, RestoreReport
from lathe.checkpoint.shadow import SYMLINK_MODE, Change, ShadowRepo


def plan_restore(
    report: RestoreReport, changes: list[Change], protected: set[str], force: bool
) -> tuple[list[str], list[Change]]:
    """Sort `changes` (current tree → target tree) into deletions and writes.

    Fills `kept`, `forced` and `skipped` in the report; returns (deletes, writes).
    """
    deletes: list[str] = []
    writes: list[Change] = []
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
                writes.append(change)
                report.recreated.append(change.path)
            case "modified":
                writes.append(change)
                report.restored.append(change.path)
    return deletes, writes


def apply_restore(
    repo: ShadowRepo, report: RestoreReport, deletes: list[str], writes: list[Change]
) -> None:
    """Delete, prune emptied directories, then write the files of `report.target`;
    refusals land in kept or skipped.

    The target's `.gitignore` files are written first, and a file they ignore is not
    deleted: it is missing from the target because it was ignored then, not because it
    did not exist (a turn that rewrote `.gitignore` made `.env` look created by it)."""
    workspace = repo.workspace
    target = report.target
    rules = [
        c
        for c in writes
        if PurePosixPath(c.path).name == ".gitignore" and _writable(workspace, c.path)
    ]
    if rules and deletes:
        _write(repo, rules, target.modes)
        writes = [c for c in writes if c not in rules]
        ignored = repo.ignored(deletes)
        deletes = [p for p in deletes if p not in ignored]
        report.skipped.extend(sorted(ignored))
    for path in sorted(deletes, key=_depth, reverse=True):
        if _delete(workspace, path):
            report.deleted.append(path)
        else:
            report.kept.append(path)
    if report.deleted:
        directories = repo.directories(target.tree)
        _prune_directories(workspace, report.deleted, directories, target.folders)
    ready = []
    for change in writes:
        if not _writable(workspace, change.path):
            _withdraw(report, change.path, report.kept)
        elif change.path in report.recreated and os.path.lexists(workspace / change.path):
            # Not in the current snapshot yet on disk: an ignored file, never backed up,
            # so overwriting it could not be undone.
            _withdraw(report, change.path, report.skipped)
        else:
            ready.append(change)
    _write(repo, ready, target.modes)
    for names in (report.restored, report.recreated, report.deleted, report.kept, report.skipped):
        names.sort()


def _write(repo: ShadowRepo, writes: list[Change], modes: Modes | None) -> None:
    """Write each file of `writes` as the target has it, with the permission bits it had
    there (`modes`; git keeps only the exec bit, and `checkout-index` had made a 0600
    file 0644). Each goes through a new file, private until it holds its content and
    bits, renamed over the old one."""
    if not writes:
        return
    umask = _umask()
    for change, content in zip(writes, repo.blobs(c.new_blob for c in writes), strict=True):
        full = repo.workspace / change.path
        full.parent.mkdir(parents=True, exist_ok=True)
        if change.new_mode == SYMLINK_MODE:
            temporary = _symlink_beside(full, os.fsdecode(content))
        else:
            handle, temporary = tempfile.mkstemp(dir=full.parent, prefix=_TEMPORARY)
        try:
            if change.new_mode != SYMLINK_MODE:
                with os.fdopen(handle, "wb") as out:
                    out.write(content)
                    os.fchmod(out.fileno(), _bits(change, modes, full, umask))
            os.replace(temporary, full)
        except BaseException:
            Path(temporary).unlink(missing_ok=True)
            raise


_TEMPORARY = ".lathe-restore-"


def _bits(change: Change, modes: Modes | None, full: Path, umask: int) -> int:
    """The permission bits for a file written back: those the target recorded; for a
    checkpoint an older lathe recorded, those the file has now (its exec bits as the
    target says), or, for one not there, what git gave one (the umask's)."""
    executable = change.new_mode.endswith("755")
    if modes is not None:
        return modes.of(change.path, executable)
    try:
        now = os.lstat(full)
    except OSError:
        now = None
    if now is None or not stat.S_ISREG(now.st_mode):
        return (0o777 if executable else 0o666) & ~umask
    bits = stat.S_IMODE(now.st_mode) & 0o666
    return bits | (bits & 0o444) >> 2 if executable else bits


def _symlink_beside(full: Path, target: str) -> str:
    """A new symlink to `target` in `full`'s folder, under a name no file has."""
    while True:
        name = str(full.parent / f"{_TEMPORARY}{secrets.token_hex(6)}")
        try:
            os.symlink(target, name)
            return name
        except FileExistsError:
            continue


def _umask() -> int:
    """This process's umask, read without setting it (`os.umask` sets it, for every
    thread at once)."""
    try:
        with open("/proc/self/status", encoding="ascii", errors="replace") as status:
            for line in status:
                if line.startswith("Umask:"):
                    return int(line.split()[1], 8)
    except (OSError, ValueError, IndexError):
        pass
    return 0o022


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
