"""Fixtures for driving the real interactive program in tmux against the fake server."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from tests.ui.tmux import Terminal

_SRC = str(Path(__file__).resolve().parents[2] / "src")

if shutil.which("tmux") is None:  # pragma: no cover - tmux is part of the test image
    pytest.skip("tmux is needed to drive the terminal UI", allow_module_level=True)


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    repo = tmp_path / "repo"
    repo.mkdir()
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    (repo / "app.py").write_text("def add(a, b):\n    return a - b\n")
    return repo


@pytest.fixture
def lathe_home(tmp_path: Path) -> Path:
    return tmp_path / "home"


LaunchFn = Callable[..., Terminal]


@pytest.fixture
def launch(
    workspace: Path, lathe_home: Path, tmp_path: Path, fake_openai: object
) -> Iterator[LaunchFn]:
    """Start the real `lathe` (`python -m lathe`) in a fresh tmux terminal; every terminal
    started is closed at the end of the test."""
    terminals: list[Terminal] = []

    def start(
        *args: str,
        width: int = 100,
        height: int = 32,
        env: dict[str, str] | None = None,
        model: str = "fake-model",
    ) -> Terminal:
        base_env = {
            "PATH": os.environ["PATH"],
            "HOME": str(tmp_path),
            "XDG_CONFIG_HOME": str(tmp_path / "config"),
            "LATHE_HOME": str(lathe_home),
            "OPENAI_API_KEY": "test-key",
            "TERM": "xterm-256color",
            "LANG": "C.UTF-8",
            "PYTHONPATH": _SRC,
            **(env or {}),
        }
        argv = [
            sys.executable,
            "-m",
            "lathe",
            "--model",
            model,
            "--base-url",
            fake_openai.base_url,  # type: ignore[attr-defined]
            *args,
        ]
        terminal = Terminal(argv, env=base_env, cwd=str(workspace), width=width, height=height)
        terminals.append(terminal)
        terminal.wait_for(r"^> ", timeout=20)
        return terminal

    yield start
    for terminal in terminals:
        terminal.close()
