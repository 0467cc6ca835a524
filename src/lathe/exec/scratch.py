"""Temporary folders the sandboxes need beside a command, and what a killed lathe left.

A sandbox writes things outside the workspace for each command: gVisor an OCI bundle
(the command, its environment, runsc's state), every sandbox that masks a file an empty
unreadable one. lathe removes them when the command or the process ends; a kill -9
ends it with no chance to, so each folder's name carries the pid of the lathe that made
it (`lathe-<kind>-<pid>-<random>`), and the first folder of a kind a process makes
removes those whose lathe is gone.
"""

from __future__ import annotations

import os
import shutil
import stat
import tempfile
from pathlib import Path

from lathe.exec.supervision import pid_alive

_swept: set[str] = set()  # the kinds this process has swept already


def scratch_folder(kind: str, *, reachable: bool = False) -> Path:
    """A new folder `lathe-<kind>-<pid>-...` for this process to remove when done.

    `reachable`: in a folder every user may pass through. runsc's sandbox drops root
    before it reads the bundle, and a temp dir inside a private folder (pam_tmpdir's
    /tmp/user/1000, a test's 0700 folder) made every command fail with "cannot read
    client sync file"; there /tmp is used instead."""
    base = scratch_base(reachable=reachable)
    if kind not in _swept:
        _swept.add(kind)
        _remove_left_behind(base, kind)
    return Path(tempfile.mkdtemp(prefix=f"lathe-{kind}-{os.getpid()}-", dir=base))


def scratch_base(*, reachable: bool = False) -> Path:
    """The temp dir, or /tmp when `reachable` and a folder on the temp dir's path shuts
    other users out."""
    base = Path(tempfile.gettempdir())
    if not reachable or _passable(base) or not Path("/tmp").is_dir():
        return base
    return Path("/tmp")


def _passable(folder: Path) -> bool:
    try:
        return all(os.stat(p).st_mode & stat.S_IXOTH for p in (folder, *folder.parents))
    except OSError:
        return False


def _remove_left_behind(base: Path, kind: str) -> None:
    for folder in base.glob(f"lathe-{kind}-*-*"):
        pid = folder.name.split("-")[2]
        if pid.isdigit() and not pid_alive(int(pid)) and folder.is_dir():
            shutil.rmtree(folder, ignore_errors=True)

