"""One writer per session, across processes.

An exclusive, non-blocking `flock` on a sidecar `<session>.lock` file. The kernel drops
the lock when the holder closes it or dies (kill -9 included), so a crashed run never
leaves a session locked. The sidecar is never deleted: unlinking a lock file while
another process waits on it would let two processes "hold" two different files.
The holder writes its pid into the sidecar only so the error can name it.
"""

from __future__ import annotations

import fcntl
import os
from pathlib import Path

from lathe.errors import UsageError


def lock_path(session_file: Path) -> Path:
    return session_file.with_suffix(".lock")


def _holder(fd: int) -> str:
    try:
        text = os.pread(fd, 32, 0).decode("ascii", "replace").strip()
    except OSError:
        text = ""
    return f"pid {text}" if text.isdigit() else "a process that did not record its pid"


class SessionLock:
    def __init__(self, fd: int) -> None:
        self._fd: int | None = fd

    @classmethod
    def acquire(cls, session_file: Path, session_id: str) -> SessionLock:
        fd = os.open(lock_path(session_file), os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = _holder(fd)
            os.close(fd)
            raise UsageError(
                f"session {session_id} is in use by another lathe process ({holder}); "
                f"wait for it to finish or stop it, or continue in a copy with "
                f"`lathe sessions fork {session_id}`"
            ) from None
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
        return cls(fd)

    def release(self) -> None:
        if self._fd is None:
            return
        fcntl.flock(self._fd, fcntl.LOCK_UN)
        os.close(self._fd)
        self._fd = None


def is_locked(session_file: Path) -> bool:
    """Whether some process (this one included) holds the session's lock right now."""
    try:
        fd = os.open(lock_path(session_file), os.O_RDONLY)
    except FileNotFoundError:
        return False
    try:
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
    except BlockingIOError:
        return True
    finally:
        os.close(fd)
    return False
