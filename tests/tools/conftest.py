"""Fixtures for the built-in tools: a real workspace, a real executor, real files."""

from __future__ import annotations

from pathlib import Path

import pytest

from lathe.exec.local import LocalExecutor
from lathe.tools.base import Limits, ToolContext
from lathe.tools.files import FileState


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    path = tmp_path / "ws"
    path.mkdir()
    return path


@pytest.fixture
def outside(tmp_path: Path) -> Path:
    """A directory next to the workspace holding a file no tool may read or change."""
    path = tmp_path / "outside"
    path.mkdir()
    (path / "secret.txt").write_text("TOP SECRET\n")
    return path


@pytest.fixture
def ctx(tmp_path: Path, workspace: Path) -> ToolContext:
    return ToolContext(
        workspace=workspace,
        executor=LocalExecutor(),
        spill_dir=tmp_path / "spill",
        file_state=FileState(),
        limits=Limits(),
    )
