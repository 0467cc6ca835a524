from __future__ import annotations

import contextlib
import json
import os
import signal
import stat
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from lathe.local.models import DEFAULT_MODEL, MODELS, model_path

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


def lathe_local(*args: str, timeout: float = 60) -> subprocess.CompletedProcess[str]:
    """`lathe local ARGS` in a session of its own: a record naming pid 0 once made it
    signal its own process group, which must not be the tests'."""
    return subprocess.run(
        [sys.executable, "-m", "lathe", "local", *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        stdin=subprocess.DEVNULL,
        start_new_session=True,
    )


@pytest.fixture
def installed(lathe_home: Path) -> Path:
    """The default model, 'installed': a sparse file of its size and its verified record."""
    model = MODELS[DEFAULT_MODEL]
    path = model_path(model)
    path.parent.mkdir(parents=True)
    with path.open("wb") as f:
        f.truncate(model.size)
    path.with_name(path.name + ".sha256").write_text(model.sha256 + "\n")
    return path


@pytest.fixture
def servers(lathe_home: Path) -> Iterator[list[int]]:
    """Pids of servers a test started; any still running at its end are killed, with
    whatever server.json still names (when it names a process: 0 would be our group)."""
    pids: list[int] = []
    yield pids
    with contextlib.suppress(OSError, ValueError, KeyError, TypeError):
        pids.append(json.loads((lathe_home / "local" / "server.json").read_text())["pid"])
    for pid in pids:
        if type(pid) is int and pid > 0:
            with contextlib.suppress(OSError):
                os.killpg(pid, signal.SIGKILL)
