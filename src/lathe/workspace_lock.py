"""One run at a time in a workspace, across processes.

Two runs editing one workspace interleave their edits and their checkpoints, so undo
no longer means anything; so do a run in a folder and one in a folder inside it. A run
(and `lathe undo`, `checkpoints restore`) holds a `lathe.file_lock.FileLock` on
`LATHE_HOME/locks/<project-slug>.lock` — outside the workspace, so a read-only workspace
can be locked too — and a shared one on the lock of each folder above the workspace. The
holder records its pid and what it is doing, only so others can say so.
"""

from __future__ import annotations

import contextlib
import os
import time
from collections.abc import Callable, Iterator
from pathlib import Path

from lathe.errors import UsageError
from lathe.file_lock import FileLock
from lathe.home import private_folder


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
    """Hold the workspace for the block: its own lock, and a shared one on each folder
    above it, so that no run works in a folder around it or inside it (their changes
    would land in each other's checkpoints). Busy: raise WorkspaceBusy, whose message
    ends with `when_busy` (what the face lets the user do instead), or with `wait` tell
    `on_wait` who holds it and block until it is free (Ctrl-C still interrupts)."""
    record = f"{os.getpid()}\n{doing}\n{time.strftime('%H:%M:%S')}\n"
    folders = [*reversed(workspace.resolve().parents), workspace]  # the outermost first
    held: list[FileLock] = []
    # Every lock lies in one folder: a lock's name tells its workspace, its record what runs.
    private_folder(lock_file(workspace).parent)
    try:
        for folder in folders:
            path = lock_file(folder)
            lock = FileLock(path, shared=folder is not workspace)
            busy = lock.try_acquire(record)
            if busy is not None:
                who, where = _holder(busy, path, folder)
                if not wait:
                    raise WorkspaceBusy(
                        f"{who} is working in {where}; wait for it to finish (or stop it), "
                        f"{when_busy}"
                    )
                if on_wait:
                    on_wait(f"waiting for {who} to finish in {where}")
                lock.acquire(record)
            held.append(lock)
        yield
    finally:
        for lock in reversed(held):
            lock.release()


def _holder(record: str, path: Path, folder: Path) -> tuple[str, str]:
    """Who holds the lock of `folder` that refused this process, and where it works: the
    holder its record names, or (with only shared holders, who write none) a process in
    a folder inside it."""
    probe = FileLock(path, shared=True)
    only_shared = probe.try_acquire() is None
    probe.release()  # kept, it would hold this very workspace against this process
    if only_shared:
        return "another lathe process", f"a folder inside {folder}"
    pid, doing, since = (record.split("\n") + [""] * 3)[:3]
    if not pid.strip().isdigit():
        return "another lathe process", str(folder)
    what = doing.strip() or "lathe"
    started = f", since {since.strip()}" if since.strip() else ""
    return f"another {what} (pid {pid.strip()}{started})", str(folder)
