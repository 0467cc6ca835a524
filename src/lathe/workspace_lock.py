"""One run at a time in a workspace, across processes.

Two runs editing one workspace interleave their edits and their checkpoints, so undo
no longer means anything. A run (and `lathe undo`, `checkpoints restore`) holds an
exclusive `flock` on `LATHE_HOME/locks/<project-slug>.lock` — outside the workspace, so
a read-only workspace can be locked too. The kernel drops it when the holder exits or
dies (kill -9 included); the file is never deleted (see `session/lock.py` for why). The
holder writes its pid and what it is doing into the file only so others can say so.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import time
from collections.abc import Callable, Iterator
from pathlib import Path

from lathe.errors import UsageError


class WorkspaceBusy(UsageError):
    """Another lathe process holds the workspace; the message names it and the way out."""


def lock_file(workspace: Path) -> Path:
    from lathe.home import lathe_home, project_slug

    return lathe_home() / "locks" / f"{project_slug(workspace)}.lock"


@contextlib.contextmanager
def hold_workspace(
    workspace: Path,
    *,
    doing: str,
    wait: bool = False,
    on_wait: Callable[[str], None] | None = None,
) -> Iterator[None]:
    """Hold the workspace for the block. Busy: raise WorkspaceBusy, or with `wait` tell
    `on_wait` who holds it and block until it is free (Ctrl-C still interrupts)."""
    path = lock_file(workspace)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = _holder(fd)
            if not wait:
                raise WorkspaceBusy(
                    f"{holder} is working in {workspace}; wait for it to finish (or stop "
                    "it), or pass --wait to start when it is done"
                ) from None
            if on_wait:
                on_wait(f"waiting for {holder} to finish in {workspace}")
            fcntl.flock(fd, fcntl.LOCK_EX)
        os.ftruncate(fd, 0)
        record = f"{os.getpid()}\n{doing}\n{time.strftime('%H:%M:%S')}\n"
        os.pwrite(fd, record.encode(), 0)
        yield
    finally:
        os.close(fd)  # closing drops the lock


def _holder(fd: int) -> str:
    try:
        pid, doing, since = (
            os.pread(fd, 512, 0).decode("utf-8", "replace").split("\n") + [""] * 3
        )[:3]
    except OSError:
        pid = doing = since = ""
    if not pid.strip().isdigit():
        return "another lathe process"
    what = doing.strip() or "lathe"
    started = f", since {since.strip()}" if since.strip() else ""
    return f"another {what} (pid {pid.strip()}{started})"
