"""Where lathe keeps its own files: sessions, logs, checkpoints, models, spills.

`LATHE_HOME` overrides the platform's user data directory. Nothing here creates a
directory at import time; callers create what they write into.
"""

from __future__ import annotations

import hashlib
import os
import re
import stat
from pathlib import Path


def lathe_home() -> Path:
    override = os.environ.get("LATHE_HOME")
    if override:
        # Absolute from where lathe started: git and other children run elsewhere
        # (in the workspace), where a relative home would name another folder.
        return Path(override).expanduser().absolute()
    from platformdirs import user_data_dir

    return Path(user_data_dir("lathe", appauthor=False))


def project_slug(workspace: Path) -> str:
    """A readable, collision-free directory name for a workspace path."""
    resolved = str(workspace.resolve())
    tail = re.sub(r"[^A-Za-z0-9._-]+", "-", resolved.strip("/"))[-60:].strip("-") or "root"
    digest = hashlib.sha256(resolved.encode()).hexdigest()[:8]
    return f"{tail}-{digest}"


def private_folder(folder: Path) -> Path:
    """`folder`, a project's own under lathe's home (its sessions, its checkpoints),
    made readable by lathe's user alone: what lathe keeps there (titles, a workspace's
    files as git stores them, 0444 whatever the original's mode) is then out of other
    users' reach whatever its own modes. A missing folder is created 0700, with those
    above it that are missing; an existing one made with looser modes is tightened.
    Only `folder` itself is ever chmodded, never a link there, nor the folders above
    it (LATHE_HOME may be one the user made for more than lathe).

    Something else where a folder should be (LATHE_HOME naming a file or /dev/null)
    is a `UsageError` naming it: `run`, `undo` and the interactive app, which all make
    their folders here, had died with a FileExistsError traceback."""
    missing = []
    for path in (folder, *folder.parents):
        if path.is_dir():
            break
        missing.append(path)
    blocker = next((path for path in reversed(missing) if os.path.lexists(path)), None)
    if blocker is not None:
        from lathe.errors import UsageError

        raise UsageError(_not_a_folder(blocker, folder))
    for path in reversed(missing):
        path.mkdir(mode=0o700, exist_ok=True)
    info = folder.lstat()
    if stat.S_ISDIR(info.st_mode) and stat.S_IMODE(info.st_mode) & 0o077:
        folder.chmod(0o700)
    return folder


def _not_a_folder(path: Path, folder: Path) -> str:
    """Why `folder` cannot be made: `path`, at or above it, is no folder."""
    try:
        mode = path.stat().st_mode
        what = "a file" if stat.S_ISREG(mode) else "a device" if stat.S_ISCHR(mode) else None
    except OSError:
        what = "a link to nothing"
    what = what or "no folder"  # a named pipe, a socket
    home = lathe_home()
    if path != home and path not in home.parents:  # inside the home: lathe's own
        return f"{path} is {what}, where lathe keeps a folder ({folder}); move it aside"
    it = "it" if path == home else str(path)
    override = os.environ.get("LATHE_HOME")
    if override:
        return (
            f"LATHE_HOME={override} is not a folder: {it} is {what}; set it to a folder "
            "(lathe makes one that is missing) or unset it"
        )
    return (
        f"lathe's data folder {home} is not a folder: {it} is {what}; set LATHE_HOME to a "
        "folder (lathe makes one that is missing)"
    )
