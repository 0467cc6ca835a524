"""Imports run one way: what the loop consults (tools, executors, providers), what
extends it (hooks) and what guards it (policy) never import the loop's package."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

_SRC = Path(__file__).resolve().parent.parent / "src" / "lathe"
_BELOW_THE_AGENT = ("policy", "hooks", "tools", "exec", "llm")


def imported_modules(path: Path) -> list[str]:
    """Every module `path` imports, TYPE_CHECKING blocks and function bodies included."""
    found: list[str] = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            found += [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found += [node.module, *(f"{node.module}.{alias.name}" for alias in node.names)]
    return found


@pytest.mark.parametrize("package", _BELOW_THE_AGENT)
def test_the_package_never_imports_the_agent(package: str) -> None:
    offenders = [
        f"{path.relative_to(_SRC)} imports {module}"
        for path in sorted((_SRC / package).rglob("*.py"))
        for module in imported_modules(path)
        if module == "lathe.agent" or module.startswith("lathe.agent.")
    ]
    assert offenders == []


_FACES = ("lathe.ui", "lathe.service", "lathe.client", "lathe.batch")


def test_only_faces_import_the_faces() -> None:
    """The terminal, the service, its client and `lathe batch` are faces: the core never
    imports them (the service builds on `ui`'s setup, and batch scoring on `ui`'s safety,
    not the other way round; plugins.py reaching into ui.safety had been an import
    cycle)."""
    faces = {_SRC / "ui", _SRC / "service", _SRC / "batch", _SRC / "client.py"}
    faces.add(_SRC / "__main__.py")
    offenders = [
        f"{path.relative_to(_SRC)} imports {module}"
        for path in sorted(_SRC.rglob("*.py"))
        if not any(path == face or face in path.parents for face in faces)
        for module in imported_modules(path)
        if any(module == face or module.startswith(face + ".") for face in _FACES)
    ]
    assert offenders == []
