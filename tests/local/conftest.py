from __future__ import annotations

import os
import stat
import sys
from pathlib import Path

import pytest

HERE = Path(__file__).parent


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers", "local_model: needs the real local model and llama-server (slow)"
    )


@pytest.fixture(autouse=True)
def lathe_home(
    request: pytest.FixtureRequest, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> Path | None:
    """Every test gets its own LATHE_HOME, except those that use the real installed model."""
    if request.node.get_closest_marker("local_model"):
        return None
    home = tmp_path / "lathe-home"
    monkeypatch.setenv("LATHE_HOME", str(home))
    return home


@pytest.fixture
def fake_llama(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """An executable `llama-server` that runs tests/local/fake_llama_server.py."""
    exe = tmp_path / "bin" / "llama-server"
    exe.parent.mkdir()
    exe.write_text(f'#!/bin/sh\nexec {sys.executable} {HERE / "fake_llama_server.py"} "$@"\n')
    exe.chmod(exe.stat().st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)
    monkeypatch.setenv("LATHE_LLAMA_SERVER", str(exe))
    return exe


def pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    try:  # a zombie child counts as gone
        return os.waitpid(pid, os.WNOHANG)[0] == 0
    except ChildProcessError:
        return True
