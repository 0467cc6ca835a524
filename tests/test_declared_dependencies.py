"""Every package lathe's code imports is declared in pyproject.toml (or is stdlib), and
every declared runtime dependency is one the code uses."""

from __future__ import annotations

import ast
import functools
import re
import sys
import tomllib
from importlib.metadata import packages_distributions
from pathlib import Path

_ROOT = Path(__file__).resolve().parent.parent
_SRC = _ROOT / "src" / "lathe"
# Declared for what they ship rather than for an import: the `rg` binary.
_NOT_IMPORTED = {"ripgrep"}


def _normal(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def _requirement_names(requirements: list[str]) -> set[str]:
    return {_normal(re.match(r"[A-Za-z0-9._-]+", r).group(0)) for r in requirements}


def _project() -> dict:
    return tomllib.loads((_ROOT / "pyproject.toml").read_text())["project"]


@functools.cache  # both tests read it: parse the tree once (~0.5 CPU-s)
def _imported_top_level() -> dict[str, list[str]]:
    """Top-level module name -> the files importing it (function bodies included)."""
    found: dict[str, list[str]] = {}
    for path in sorted(_SRC.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                names = [node.module]
            else:
                continue
            for name in names:
                found.setdefault(name.split(".")[0], []).append(str(path.relative_to(_SRC)))
    return found


@functools.cache  # scans every installed distribution's file list (~0.2 CPU-s)
def _distributions() -> dict[str, list[str]]:
    return packages_distributions()


def test_every_imported_package_is_declared() -> None:
    project = _project()
    declared = _requirement_names(project["dependencies"])
    for extra in project.get("optional-dependencies", {}).values():
        declared |= _requirement_names(extra)
    distributions = _distributions()
    undeclared = {
        module: sorted(set(files))
        for module, files in _imported_top_level().items()
        if module != "lathe"
        and module not in sys.stdlib_module_names
        and not {_normal(d) for d in distributions.get(module, [module])} & declared
    }
    assert undeclared == {}


def test_every_runtime_dependency_is_imported() -> None:
    distributions = _distributions()
    provided = {
        _normal(d) for module in _imported_top_level() for d in distributions.get(module, [])
    }
    unused = _requirement_names(_project()["dependencies"]) - provided - _NOT_IMPORTED
    assert unused == set()
