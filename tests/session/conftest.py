from __future__ import annotations

from pathlib import Path

import pytest

from lathe.session import SessionStore


@pytest.fixture
def home(tmp_path: Path) -> Path:
    return tmp_path / "home"


@pytest.fixture
def store(home: Path) -> SessionStore:
    return SessionStore(home)


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    path = tmp_path / "repo"
    path.mkdir()
    return path
