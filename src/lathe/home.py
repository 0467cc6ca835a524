"""Where lathe keeps its own files: sessions, logs, checkpoints, models, spills.

`LATHE_HOME` overrides the platform's user data directory. Nothing here creates a
directory at import time; callers create what they write into.
"""

from __future__ import annotations

import hashlib
import os
import re
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
