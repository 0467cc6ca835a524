"""Which paths lie in folders of installed packages, vendored code or build output.

One rule for the lists of the workspace's files: grep and glob give the project's own
files first and these after (without a .gitignore, 100,000 files of `node_modules` hid
the one project file that matched), as the system prompt's file list does. A folder is
judged below the folder searched, so a search given such a folder as its path searches
it as asked.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable

FOLDERS = frozenset(
    {".venv", "venv", "env", "node_modules", "site-packages", "__pycache__", ".tox", "dist",
     "build", "target", "vendor", ".git"}
)  # fmt: skip

# rg globs leaving these folders out at any depth (a trailing "/" matches folders only,
# so a script named `build` stays in).
EXCLUDE_GLOBS = tuple(f"--glob=!{name}/" for name in sorted(FOLDERS))

_NAMED_MAX = 3


def prefix(target: str) -> str:
    """What rg puts before a path below `target` (as rg was given it, "./" stripped)."""
    return "" if target in (".", "") else target.rstrip("/") + "/"


def inside(path: str, below: str = "") -> bool:
    """Whether `path` lies in one of these folders below `below` (a `prefix`); the
    file searched, when a file was, never does."""
    if below and path == below[:-1]:
        return False
    relative = path[len(below) :] if path.startswith(below) else path
    return any(part in FOLDERS for part in relative.split("/")[:-1])


def named_in(glob: str | None) -> bool:
    """Whether a glob names one of these folders: a search asking for them explicitly."""
    return bool(glob) and any(part in FOLDERS for part in glob.replace("\\", "/").split("/"))


def folders(paths: Iterable[str], below: str = "") -> str:
    """The folders `paths` lie in, as a path argument names them, most used first
    ("node_modules, packages/ui/node_modules")."""
    found: Counter[str] = Counter()
    for path in paths:
        relative = path[len(below) :] if path.startswith(below) else path
        parts = relative.split("/")[:-1]
        cut = next((n for n, part in enumerate(parts) if part in FOLDERS), None)
        if cut is not None:
            found[below + "/".join(parts[: cut + 1])] += 1
    names = [name for name, _ in found.most_common(_NAMED_MAX)]
    return ", ".join(names) + (", ..." if len(found) > _NAMED_MAX else "")


def named(where: str) -> str:
    """How a notice names the folders `folders` gave."""
    return f"in folders of dependencies or build output ({where})"


def path_example(where: str) -> str:
    """The path argument that searches only the first of the folders `folders` gave."""
    return f'path="{where.split(", ")[0]}"'
