"""One run at a time in a workspace, across processes.

Two runs editing one workspace interleave their edits and their checkpoints, so undo
no longer means anything. A run (and `lathe undo`, `checkpoints restore`) holds a
`lathe.file_lock.FileLock` on `LATHE_HOME/locks/<project-slug>.lock` — outside the
workspace, so a read-only workspace can be locked too. The holder records its pid and
what it is doing, only so others can say so.
"""

from __future__ import annotations

import contextlib
import os
import time
from collections.abc import Callable, Iterator
from pathlib import Path

from lathe.errors import UsageError
from lathe.file_lock import FileLock


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
    when_busy: str,
) -> Iterator[None]:
    """Hold the workspace for the block. Busy: raise WorkspaceBusy, whose message ends
    with `when_busy` (what the face lets the user do instead), or with `wait` tell
    `on_wait` who holds it and block until it is free (Ctrl-C still interrupts)."""
    path = lock_file(workspace)
    path.parent.mkdir(parents=True, exist_ok=True)
    lock = FileLock(path)
    record = f"{os.getpid()}\n{doing}\n{time.strftime('%H:%M:%S')}\n"
    try:
        busy = lock.try_acquire(record)
        if busy is not None:
            holder = _holder(busy)
            if not wait:
                raise WorkspaceBusy(
                    f"{holder} is working in {workspace}; wait for it to finish (or stop "
                    f"it), {when_busy}"
                )
            if on_wait:
                on_wait(f"waiting for {holder} to finish in {workspace}")
            lock.acquire(f"{os.getpid()}\n{doing}\n{time.strftime('%H:%M:%S')}\n")
        yield
    finally:
        lock.release()


def _holder(record: str) -> str:
    pid, doing, since = (record.split("\n") + [""] * 3)[:3]
    if not pid.strip().isdigit():
        return "another lathe process"
    what = doing.strip() or "lathe"
    started = f", since {since.strip()}" if since.strip() else ""
    return f"another {what} (pid {pid.strip()}{started})"
