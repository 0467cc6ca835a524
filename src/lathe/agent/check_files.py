"""The files a check is made of: the tests, conftest.py and the test runner's
configuration. A check that passes only because these changed verifies nothing, so the
verify gate says which of them changed since it first ran, and code in a reply never
changes them (`reply_code`).
"""

from __future__ import annotations

import hashlib
import os
import re
from pathlib import Path

CHECK_FILE = re.compile(
    r"(^|/)(tests?|__tests__|spec|specs)/|(^|/)(test_[^/]*|[^/]*_test\.\w+|[^/]*\.(test|spec)"
    r"\.\w+|conftest\.py|pytest\.ini|tox\.ini|setup\.cfg|pyproject\.toml|noxfile\.py"
    r"|(jest|vitest|karma|playwright)\.config\.\w+|package\.json|[^/]*\.pth"
    r"|(site|user)customize\.py|pytest\.py)$|(^|/)pytest/[^/]+\.py$"
)
# Folders no check file of the project's own lives in, and that can be huge.
_SKIPPED = frozenset({"node_modules", "__pycache__", "venv", "env", "build", "dist", "target"})


def check_file_digests(workspace: Path) -> dict[str, str]:
    """Each check file of `workspace` (relative path) and a digest of its content."""
    found: dict[str, str] = {}
    for folder, dirs, files in os.walk(workspace):
        dirs[:] = [d for d in dirs if not d.startswith(".") and d not in _SKIPPED]
        base = Path(folder).relative_to(workspace).as_posix()
        for name in files:
            relative = name if base == "." else f"{base}/{name}"
            if not CHECK_FILE.search(relative):
                continue
            try:
                data = Path(folder, name).read_bytes()
            except OSError:
                continue
            found[relative] = hashlib.blake2b(data, digest_size=16).hexdigest()
    return found


def changed(before: dict[str, str], after: dict[str, str]) -> list[str]:
    """The check files added, removed or changed from `before` to `after`, sorted."""
    return sorted(
        path for path in before.keys() | after.keys() if before.get(path) != after.get(path)
    )
