import os
from pathlib import Path

import pytest

from lathe.config import ENV_KEYS, KEY_OVERRIDE_ENV

_KEY_VARS = ("OPENAI_API_KEY", "ANTHROPIC_API_KEY", "DEEPSEEK_API_KEY", KEY_OVERRIDE_ENV)


@pytest.fixture(autouse=True)
def clean_env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """No config from the machine running the tests: no LATHE_* or key variables, and no
    user file (LATHE_CONFIG=/dev/null; a named file that is missing is an error)."""
    for var in (*ENV_KEYS, *_KEY_VARS):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("LATHE_CONFIG", os.devnull)


@pytest.fixture
def user_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The user file LATHE_CONFIG names, in the test's temporary directory; not written
    yet (its folder is)."""
    path = tmp_path / "user" / "config.toml"
    path.parent.mkdir(parents=True, exist_ok=True)
    monkeypatch.setenv("LATHE_CONFIG", str(path))
    return path


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    """A repository root: project config discovery stops here."""
    root = tmp_path / "repo"
    (root / ".git").mkdir(parents=True)
    (root / ".lathe").mkdir()
    return root


@pytest.fixture
def project_file(workspace: Path) -> Path:
    return workspace / ".lathe" / "config.toml"
