"""One writer per session, across processes.

A `lathe.file_lock.FileLock` on a sidecar `<session>.lock` file, taken without waiting:
a second writer is told the holder's pid, which the holder records in the sidecar.
"""

from __future__ import annotations

import os
from pathlib import Path

from lathe.errors import UsageError
from lathe.file_lock import FileLock, is_held


def lock_path(session_file: Path) -> Path:
    return session_file.with_suffix(".lock")


def _holder(record: str) -> str:
    text = record.strip()
    return f"pid {text}" if text.isdigit() else "a process that did not record its pid"


class SessionInUse(UsageError):
    """Another lathe process holds the session: the message names it and the way out."""


class SessionLock:
    def __init__(self, lock: FileLock) -> None:
        self._lock = lock

    @classmethod
    def acquire(cls, session_file: Path, session_id: str) -> SessionLock:
        lock = FileLock(lock_path(session_file))
        holder = lock.try_acquire(record=f"{os.getpid()}\n")
        if holder is not None:
            lock.release()
            raise SessionInUse(
                f"session {session_id} is in use by another lathe process ({_holder(holder)}); "
                f"wait for it to finish or stop it, or continue in a copy with "
                f"`lathe sessions fork {session_id}`"
            )
        return cls(lock)

    def release(self) -> None:
        self._lock.release()


def is_locked(session_file: Path) -> bool:
    """Whether some process (this one included) holds the session's lock right now."""
    return is_held(lock_path(session_file))
