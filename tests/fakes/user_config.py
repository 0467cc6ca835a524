"""A user config file for a test: LATHE_CONFIG must name a file that is there (a missing
one is an error, so that a mistyped path cannot drop the user's rules)."""

from __future__ import annotations

from pathlib import Path


def user_config_file(path: Path) -> str:
    """`path` as LATHE_CONFIG: created empty (with its folder) unless a test wrote it."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.touch(exist_ok=True)
    return str(path)
