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


def write_atomic(path: Path, data: bytes) -> None:
    """Replace `path` with `data` in one step, keeping an existing file's mode.

    The data is written to a temporary file beside `path` and fsynced before it is
    renamed over it; on any failure the temporary file is removed and the error raised.
    """
    try:
        mode: int | None = stat.S_IMODE(path.stat().st_mode)
    except FileNotFoundError:
        mode = None
    tmp = path.with_name(f".{path.name}.{secrets.token_hex(4)}.lathe-tmp")
    # 0o666 lets the umask decide a new file's mode, as any editor would.
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
            if mode is not None:
                os.fchmod(handle.fileno(), mode)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            tmp.unlink()
        raise
