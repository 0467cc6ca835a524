"""A LATHE_HOME that names no folder (a file, a device, a path below a file) is one
`lathe: ` line and exit 2 from each command that makes its folders there, through the
real CLI. Before, `lathe run`, `lathe undo`, `lathe checkpoints restore` and the
interactive app died with a FileExistsError traceback (exit 1).
"""

from __future__ import annotations

import os
import pty
import subprocess
import sys
from pathlib import Path

import pytest


def _env(home: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("LATHE_", "OPENAI_"))}
    env.update({"OPENAI_API_KEY": "sk-test", "LATHE_HOME": home})
    return env


def _lathe(tmp_path: Path, home: str, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "lathe", *args], cwd=tmp_path, env=_env(home),
        capture_output=True, text=True, timeout=120, stdin=subprocess.DEVNULL,
    )  # fmt: skip


@pytest.fixture(params=["a file", "a device", "below a file"])
def home(request, tmp_path: Path) -> tuple[str, str]:
    """A LATHE_HOME that is no folder, and what the message says stands there."""
    file = tmp_path / "settings.txt"
    file.write_text("not a folder\n")
    match request.param:
        case "a file":
            return str(file), "it is a file"
        case "a device":
            return os.devnull, "it is a device"
    return str(file / "lathe"), f"{file} is a file"


def _said(result, home: tuple[str, str]) -> None:
    path, what = home
    assert result.returncode == 2, result.stderr
    assert result.stderr.splitlines() == [
        f"lathe: LATHE_HOME={path} is not a folder: {what}; set it to a folder (lathe makes "
        "one that is missing) or unset it"
    ]


def test_a_run_says_so_in_one_line(tmp_path, home, fake_openai):
    ws = tmp_path / "ws"
    ws.mkdir()

    result = _lathe(
        tmp_path, home[0], "run", "--model", "m", "--base-url", fake_openai.base_url,
        "-C", str(ws), "look around",
    )  # fmt: skip

    _said(result, home)
    assert fake_openai.chat_bodies() == []


@pytest.mark.parametrize("command", [["undo"], ["checkpoints", "restore", "1"]])
def test_undo_and_restore_say_so_too(tmp_path, home, command):
    _said(_lathe(tmp_path, home[0], *command, "-C", str(tmp_path)), home)


def test_the_interactive_app_says_so_before_it_takes_the_terminal(tmp_path):
    home = tmp_path / "settings.txt"
    home.write_text("not a folder\n")
    master, slave = pty.openpty()
    process = subprocess.Popen(
        [sys.executable, "-m", "lathe", "--model", "m", "--base-url", "http://127.0.0.1:9/v1"],
        cwd=tmp_path, env=_env(str(home)), stdin=slave, stdout=slave, stderr=subprocess.PIPE,
    )  # fmt: skip
    os.close(slave)
    try:
        _, stderr = process.communicate(timeout=60)
    finally:
        os.close(master)

    assert process.returncode == 2, stderr.decode()
    assert stderr.decode().splitlines() == [
        f"lathe: LATHE_HOME={home} is not a folder: it is a file; set it to a folder (lathe "
        "makes one that is missing) or unset it"
    ]
