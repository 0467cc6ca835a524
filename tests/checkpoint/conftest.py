"""Fixtures for checkpoint tests: a workspace and a LATHE_HOME in tmp_path, real git."""

from __future__ import annotations

from pathlib import Path

import pytest

from lathe.checkpoint import Checkpoints


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    path = tmp_path / "lathe-home"
    monkeypatch.setenv("LATHE_HOME", str(path))
    return path


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    path = tmp_path / "ws"
    path.mkdir()
    return path


@pytest.fixture
def cp(ws: Path, home: Path) -> Checkpoints:
    return Checkpoints(ws, home)
