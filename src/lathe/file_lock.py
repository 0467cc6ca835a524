"""lathe's one cross-process lock: an exclusive `flock` on a file (or a shared one).

    lock = FileLock(path)
    holder = lock.try_acquire(record="4242\\nlathe run\\n")  # None: held now
    if holder is not None:              # someone else has it; `holder` is what they wrote
        lock.acquire(record=...)        # ... or wait for them
    ...
    lock.release()                      # or let the process end: the kernel drops it

The kernel drops the lock when the holder closes the file or dies (kill -9 included), so
a crashed lathe never leaves anything locked. The file is not deleted while anyone may
still wait on it: unlinking a lock file another process waits on would let two
processes "hold" two different files (the one exception, a finished subagent's own
worktrees folder, which only its ended run used: `worktree.remove_worktree`). The
holder writes a short record into it (its pid, what it is doing) only so that others
can say who holds it. Used for sessions (`session/lock.py`),
workspaces (`workspace_lock.py`) and the checkpoint store.

A shared lock (`FileLock(path, shared=True)`) may be held by many processes at once and
keeps out an exclusive one; its holders write no record (they would overwrite each
other's), so an exclusive holder refused by them reads no record.
"""

from __future__ import annotations

import fcntl
import os
from pathlib import Path
from types import TracebackType

_RECORD_BYTES = 512


class FileLock:
    """An exclusive lock on `path` (created if missing; its folder must exist), or with
    `shared` one that other shared holders may hold too."""

    def __init__(self, path: Path, *, shared: bool = False) -> None:
        self.path = path
        self._mode = fcntl.LOCK_SH if shared else fcntl.LOCK_EX
        self._fd: int | None = None
        self._held = False

    def try_acquire(self, record: str = "") -> str | None:
        """Take the lock without waiting and write `record` into the file: None. When
        another process holds it: what that holder recorded (the lock stays untaken, and
        `acquire` may wait for it)."""
        fd = self._open()
        try:
            fcntl.flock(fd, self._mode | fcntl.LOCK_NB)
        except BlockingIOError:
            return self._record_of(fd)
        self._took(fd, record)
        return None

    def acquire(self, record: str = "") -> None:
        """Take the lock, waiting as long as another process holds it (a signal such as
        Ctrl-C still interrupts the wait)."""
        fd = self._open()
        fcntl.flock(fd, self._mode)
        self._took(fd, record)

    def release(self) -> None:
        """Drop the lock (idempotent)."""
        if self._fd is not None:
            os.close(self._fd)  # closing drops the flock
            self._fd = None
        self._held = False

    def __enter__(self) -> FileLock:
        self.acquire()
        return self

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.release()

    def _open(self) -> int:
        if self._held:
            raise RuntimeError(f"{self.path} is already locked by this FileLock")
        if self._fd is None:
            self._fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
        return self._fd

    def _took(self, fd: int, record: str) -> None:
        self._held = True
        if self._mode == fcntl.LOCK_SH:
            return
        os.ftruncate(fd, 0)
        if record:
            os.pwrite(fd, record.encode("utf-8", "replace")[:_RECORD_BYTES], 0)

    @staticmethod
    def _record_of(fd: int) -> str:
        try:
            return os.pread(fd, _RECORD_BYTES, 0).decode("utf-8", "replace")
        except OSError:
            return ""


def is_held(path: Path) -> bool:
    """Whether some process (this one included) holds the lock on `path` right now."""
    try:
        fd = os.open(path, os.O_RDONLY)
    except FileNotFoundError:
        return False
    try:
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
    except BlockingIOError:
        return True
    finally:
        os.close(fd)
    return False
