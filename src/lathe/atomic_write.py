"""Replacing a file whole, so a reader sees the old bytes or the new ones, never a mix.

Kept apart from the file tools (and their imports: the tool seam, pydantic) because
light commands write through it too: `sessions list` saves its summary index with it.
"""

from __future__ import annotations

import contextlib
import os
import secrets
import stat
from pathlib import Path


def write_atomic(
    path: Path, data: bytes, *, through_links: bool = False, mode: int | None = None
) -> None:
    """Replace `path` with `data` in one step, keeping an existing file's mode and, where
    lathe may set it, its owner. A file of lathe's own that others must not read gives
    its `mode` (0o600), which holds whatever mode an existing file had.

    The data is written to a temporary file beside `path` and fsynced before it is
    renamed over it; on any failure the temporary file is removed and the error raised.
    A file with other hard links is rewritten in place: a rename would leave the other
    names with the old content. A symlink is replaced, unless `through_links` (the
    user's own files, such as a memory file kept in dotfiles): then the file it leads
    to changes. Never by default: a command could swap a workspace file for a link
    between a check and the write.
    """
    if through_links:
        path = Path(os.path.realpath(path))
    try:
        info: os.stat_result | None = os.lstat(path)
    except FileNotFoundError:
        info = None
    if info is not None and stat.S_ISLNK(info.st_mode):
        info = None  # the link itself is replaced, as a new file
    if info is not None and info.st_nlink > 1 and stat.S_ISREG(info.st_mode):
        _rewrite_in_place(path, data, mode)
        return
    # Short whatever the name: `.<name>.<hex>` was past the limit for a 240-byte name.
    tmp = path.with_name(f".lathe-{secrets.token_hex(4)}.tmp")
    # 0o666 lets the umask decide a new file's mode, as any editor would.
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666 if mode is None else mode)
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
            if info is not None:
                _keep_owner(handle.fileno(), info)
                os.fchmod(handle.fileno(), stat.S_IMODE(info.st_mode) if mode is None else mode)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            tmp.unlink()
        raise


def _keep_owner(fd: int, info: os.stat_result) -> None:
    """Give the new file the old one's owner and group when they differ from lathe's
    (root in a container over a user's bind-mounted files); where lathe may not (it is
    not root), the new file is lathe's, as with any editor."""
    if (info.st_uid, info.st_gid) == (os.geteuid(), os.getegid()):
        return
    with contextlib.suppress(PermissionError):
        os.fchown(fd, info.st_uid, info.st_gid)


def _rewrite_in_place(path: Path, data: bytes, mode: int | None) -> None:
    with open(path, "r+b") as handle:
        if mode is not None:
            os.fchmod(handle.fileno(), mode)
        handle.write(data)
        handle.truncate()
        handle.flush()
        os.fsync(handle.fileno())
