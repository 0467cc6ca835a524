"""Bring workspace files back to a recorded tree, leaving the user's own changes alone."""

from __future__ import annotations

import errno
import os
import secrets
import stat
import tempfile
from collections.abc import Iterable
from pathlib import Path, PurePosixPath

from lathe.checkpoint.model import Modes, RestoreReport
from lathe.checkpoint.shadow import SYMLINK_MODE, Change, ShadowRepo
from lathe.exec.terminal import visible_name


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


def plan_modes(
    report: RestoreReport, bits: dict[str, int], protected: set[str], force: bool
) -> dict[str, int]:
    """Of `bits` (files whose content is already the target's, each with the permission
    bits the target recorded for it), those whose bits to set back: one the user
    changed since lathe last did (`protected`) is kept unless `force`. Fills `modes`,
    `kept` and `forced` in the report."""
    chmods: dict[str, int] = {}
    for path, mode in sorted(bits.items()):
        if path in protected:
            if not force:
                report.kept.append(path)
                continue
            report.forced.append(path)
        chmods[path] = mode
        report.modes.append(path)
    return chmods


def unchangeable(
    workspace: Path, deletes: list[str], writes: list[Change], chmods: Iterable[str] = ()
) -> dict[str, str]:
    """Those of the files a restore would delete, write or chmod that it cannot, each
    with why, found before anything changes: a folder the process may not write in (its
    mode, an immutable folder, a read-only file system), a file whose attributes refuse
    changes (immutable), a file to chmod that is another user's. Not everything shows
    beforehand (an append-only file, a full disk): `apply_restore` records what fails on
    the way in `report.failed`."""
    found: dict[str, str] = {}
    for path in chmods:
        why = _not_yours(workspace / path)
        if why is not None:
            found[path] = why
    folders: dict[Path, str | None] = {}
    for path in [*deletes, *(c.path for c in writes)]:
        if not _writable(workspace, path):
            continue  # kept, never written: see `apply_restore`
        full = workspace / path
        folder = full.parent
        while folder != workspace and not folder.exists():
            folder = folder.parent
        if folder not in folders:
            folders[folder] = _refused(folder, "folder", workspace)
        why = folders[folder]
        if why is None and full.is_file() and not full.is_symlink():
            why = _refused(full, "file", workspace)
        if why is not None:
            found[path] = why
    return found


def _not_yours(full: Path) -> str | None:
    """Why this process may not set the bits of `full` (it belongs to another user), or
    None."""
    try:
        owner = os.lstat(full).st_uid
    except OSError:
        return None  # gone meanwhile: `apply_restore` keeps it
    if os.geteuid() in (0, owner):
        return None
    return f"the file is another user's (owner uid {owner}): its mode cannot be set back"


def _refused(full: Path, kind: str, workspace: Path) -> str | None:
    """Why this process may not change `full` (a folder: what is in it), or None."""
    wanted = os.W_OK | (os.X_OK if kind == "folder" else 0)
    if os.access(full, wanted):
        return None
    where = visible_name(full.relative_to(workspace).as_posix())
    name = "the file" if kind == "file" else f"folder {where}/" if where != "." else "the workspace"
    try:
        status = os.stat(full)
    except OSError as exc:
        return f"{name} cannot be read: {exc.strerror}"
    mode = f"{stat.S_IMODE(status.st_mode):04o}"
    mine = os.geteuid() == 0 or (status.st_uid == os.geteuid() and status.st_mode & 0o200)
    if kind == "file" and not mine:
        return None  # a read-only file: replaced through its folder, which may be written
    if not mine:
        owner = "" if status.st_uid == os.geteuid() else f", owner uid {status.st_uid}"
        return f"{name} is not writable for you (mode {mode}{owner})"
    return (
        f"{name} refuses changes although its mode ({mode}) allows them: it is immutable "
        "(`lsattr` shows an i; `chattr -i` as root lifts it) or on a read-only file system"
    )


def apply_restore(
    repo: ShadowRepo,
    report: RestoreReport,
    deletes: list[str],
    writes: list[Change],
    chmods: dict[str, int] | None = None,
) -> None:
    """Delete, prune emptied directories, write the files of `report.target`, then set
    the bits of `chmods` (see `plan_modes`); refusals land in kept or skipped, and what
    fails on the way (an append-only file, a full disk) in `report.failed`, the rest
    going on.

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
        _write(repo, rules, target.modes, report)
        writes = [c for c in writes if c not in rules]
        ignored = repo.ignored(deletes)
        deletes = [p for p in deletes if p not in ignored]
        report.skipped.extend(sorted(ignored))
    for path in sorted(deletes, key=_depth, reverse=True):
        try:
            if _delete(workspace, path):
                report.deleted.append(path)
            else:
                report.kept.append(path)
        except OSError as exc:
            report.failed[path] = f"not deleted: {exc.strerror}"
    if report.deleted:
        directories = repo.directories(target.tree)
        _prune_directories(workspace, report.deleted, directories, target.folders)
    ready = []
    for change in writes:
        if not _writable(workspace, change.path):
            _withdraw(report, change.path, report.kept)
        elif change.path in report.recreated and os.path.lexists(workspace / change.path):
            # Not in the current snapshot yet on disk: an ignored file, never backed up,
            # so overwriting it could not be undone. `held` until the store knows
            # whether the result records it (see `RestoreReport`).
            _withdraw(report, change.path, report.held)
        else:
            ready.append(change)
    _write(repo, ready, target.modes, report)
    _set_bits(workspace, chmods or {}, report)
    for names in (
        report.restored,
        report.recreated,
        report.deleted,
        report.modes,
        report.kept,
        report.skipped,
        report.held,
    ):
        names.sort()


def _set_bits(workspace: Path, chmods: dict[str, int], report: RestoreReport) -> None:
    """Give each file of `chmods` its bits (`_chmod_file`: never through a symlink). One
    that is no longer a regular file under real folders there (changed meanwhile) is
    kept; one that refuses is in `report.failed`."""
    for path, bits in chmods.items():
        try:
            if _chmod_file(workspace, path, bits):
                continue
            report.kept.append(path)
        except OSError as exc:
            report.failed[path] = f"mode not set back: {exc.strerror}"
        report.modes.remove(path)
        if path in report.forced:
            report.forced.remove(path)


# Handles that follow no symlink. O_PATH needs no permission to read (a 0200 file's bits
# are set back too) and opens nothing (a FIFO, a device); it takes no fchmod, but its name
# under /proc/self/fd stands for the file it holds, whatever that file's name is now.
_NO_LINK = os.O_NOFOLLOW | os.O_CLOEXEC
_FOLDER = os.O_DIRECTORY | _NO_LINK | getattr(os, "O_PATH", os.O_RDONLY)
_HELD = "/proc/self/fd"
# What opening a name without following a link meets where a regular file or a real
# folder was: nothing, a symlink (ELOOP; ENOTDIR for a folder), a file for a folder.
_CHANGED = frozenset({errno.ENOENT, errno.ELOOP, errno.ENOTDIR})


def _chmod_file(workspace: Path, path: str, bits: int) -> bool:
    """Give `path` `bits` when it is a regular file under real folders of `workspace`;
    False when it is not. Each folder, then the file, is opened without following a
    symlink and the bits are set on what was opened, not on the name: `lstat` then
    `chmod` by name had set the bits of a link's target, outside the workspace maybe,
    when the file or a folder above it became a link between the two."""
    by_path = hasattr(os, "O_PATH") and os.path.isdir(_HELD)
    *folders, name = PurePosixPath(path).parts
    handle = os.open(workspace, _FOLDER & ~os.O_NOFOLLOW)  # the workspace may be a link
    try:
        for part, flags in [*((f, _FOLDER) for f in folders), (name, _file_flags(by_path))]:
            inner = os.open(part, flags, dir_fd=handle)
            os.close(handle)
            handle = inner
        if not stat.S_ISREG(os.fstat(handle).st_mode):
            return False
        if by_path:
            os.chmod(f"{_HELD}/{handle}", bits)
        else:
            os.fchmod(handle, bits)
        return True
    except OSError as exc:
        if exc.errno in _CHANGED:
            return False
        raise
    finally:
        os.close(handle)


def _file_flags(by_path: bool) -> int:
    """How a file whose bits are set is opened: as a place (O_PATH), else for reading
    without waiting (a FIFO's writer); never through a symlink."""
    return _NO_LINK | (os.O_PATH if by_path else os.O_RDONLY | os.O_NONBLOCK)


def _write(
    repo: ShadowRepo, writes: list[Change], modes: Modes | None, report: RestoreReport
) -> None:
    """Write each file of `writes` as the target has it, with the permission bits it had
    there (`modes`; git keeps only the exec bit, and `checkout-index` had made a 0600
    file 0644). Each goes through a new file, private until it holds its content and
    bits, renamed over the old one; one that fails is left as it was, in
    `report.failed`, and the others go on."""
    if not writes:
        return
    umask = _umask()
    for change, content in zip(writes, repo.blobs(c.new_blob for c in writes), strict=True):
        full = repo.workspace / change.path
        try:
            _put(full, change, content, _bits(change, modes, full, umask))
        except OSError as exc:
            for names in (report.restored, report.recreated, report.forced):
                if change.path in names:
                    names.remove(change.path)
            report.failed[change.path] = f"not written: {exc.strerror}"


def _put(full: Path, change: Change, content: bytes, bits: int) -> None:
    full.parent.mkdir(parents=True, exist_ok=True)
    if change.new_mode == SYMLINK_MODE:
        temporary = _symlink_beside(full, os.fsdecode(content))
    else:
        handle, temporary = tempfile.mkstemp(dir=full.parent, prefix=_TEMPORARY)
    try:
        if change.new_mode != SYMLINK_MODE:
            with os.fdopen(handle, "wb") as out:
                out.write(content)
                os.fchmod(out.fileno(), bits)
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
