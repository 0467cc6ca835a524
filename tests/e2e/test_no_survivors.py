"""`lathe run` as a real process: nothing a command or a hook starts outlives its timeout
or lathe itself, `setsid` grandchildren included (issue 13, item 10)."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from tests.e2e.test_calculator import run_against, workspace
from tests.exec.test_bwrap import needs_bwrap
from tests.fakes.openai_server import Call, Hang, Reply
from tests.tools.helpers import process_alive


def _in_own_session(pid_file: Path, name: str = "sleep") -> str:
    """A grandchild in a session of its own, off the command's pipes, recording its pid."""
    return f"setsid bash -c 'echo $$ > {pid_file}; exec -a {name} sleep 300' > /dev/null 2>&1 &"


def _pids(*pid_files: Path) -> list[int]:
    return [int(f.read_text()) for f in pid_files if f.exists() and f.read_text().strip()]


def _wait_until(condition, within: float, message: str) -> None:
    deadline = time.monotonic() + within
    while not condition():
        assert time.monotonic() < deadline, message
        time.sleep(0.05)


@pytest.fixture
def pid_files(tmp_path: Path) -> Iterator[tuple[Path, Path]]:
    files = (tmp_path / "child.pid", tmp_path / "grandchild.pid")
    yield files
    for pid in _pids(*files):  # survivors of a failing test
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)


def _start_lathe(server, ws: Path, tmp_path: Path, approval: str) -> subprocess.Popen:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("LATHE_", "OPENAI_"))}
    env.update(OPENAI_API_KEY="sk-test", LATHE_HOME=str(tmp_path / "home"))
    return subprocess.Popen(
        [sys.executable, "-m", "lathe", "run", "--model", "m", "--base-url", server.base_url,
         "-C", str(ws), "--approval", approval, "start the servers"],
        cwd=tmp_path, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip


def test_kill_9_of_lathe_in_full_mode_leaves_no_command_behind(
    tmp_path, fake_openai, pid_files
) -> None:
    child, grandchild = pid_files
    command = f"sleep 300 & echo $! > {child}; {_in_own_session(grandchild)} wait"
    fake_openai.enqueue(Reply(calls=[Call("bash", {"command": command})]), Hang(60))
    lathe = _start_lathe(fake_openai, workspace(tmp_path), tmp_path, "full")
    try:
        _wait_until(lambda: len(_pids(*pid_files)) == 2, 60, "the command never started")
        lathe.kill()
        lathe.wait(timeout=10)
        _wait_until(
            lambda: not any(process_alive(pid) for pid in _pids(*pid_files)),
            5, "a process the command started outlived lathe",
        )  # fmt: skip
    finally:
        lathe.kill()
        lathe.wait(timeout=10)


def _processes_named(marker: str) -> list[int]:
    """Live processes whose argv[0] is `marker`."""
    found = []
    for entry in Path("/proc").iterdir():
        try:
            named = entry.name.isdigit() and (entry / "cmdline").read_bytes().startswith(
                marker.encode() + b"\0"
            )
            if named and process_alive(int(entry.name)):
                found.append(int(entry.name))
        except OSError:
            continue
    return found


@needs_bwrap
def test_kill_9_of_lathe_in_auto_mode_ends_the_sandbox_too(tmp_path, fake_openai) -> None:
    # Inside the sandbox pids are the namespace's, so the processes are found by name.
    marker = f"lathe-survivor-{uuid.uuid4().hex}"
    ws = workspace(tmp_path)
    command = (
        f"bash -c 'exec -a {marker} sleep 300' & {_in_own_session(ws / 'gc.pid', marker)} "
        f"while [ ! -s gc.pid ]; do sleep 0.01; done; touch started; wait"
    )
    fake_openai.enqueue(Reply(calls=[Call("bash", {"command": command})]), Hang(60))
    lathe = _start_lathe(fake_openai, ws, tmp_path, "auto")
    try:
        _wait_until(lambda: (ws / "started").exists(), 60, "the command never started")
        assert len(_processes_named(marker)) == 2
        lathe.kill()
        lathe.wait(timeout=10)
        _wait_until(lambda: not _processes_named(marker), 5, "the sandbox outlived lathe")
    finally:
        lathe.kill()
        lathe.wait(timeout=10)
        for pid in _processes_named(marker):
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)


def test_a_timed_out_command_in_full_mode_leaves_no_grandchild(
    tmp_path, fake_openai, pid_files
) -> None:
    _, grandchild = pid_files
    call = Call("bash", {"command": f"{_in_own_session(grandchild)} sleep 30", "timeout": 1})
    fake_openai.enqueue(Reply(calls=[call]), Reply("gave up"))

    result = run_against(fake_openai, workspace(tmp_path), tmp_path, "--approval", "full", "go")

    assert result.returncode == 0, result.stderr
    tool = next(m for m in fake_openai.chat_bodies()[1]["messages"] if m["role"] == "tool")
    assert "timed out" in tool["content"]
    assert not process_alive(_pids(grandchild)[0])


def test_a_pre_tool_hook_that_times_out_leaves_no_grandchild(
    tmp_path, fake_openai, pid_files
) -> None:
    _, grandchild = pid_files
    ws = workspace(tmp_path)
    (ws / ".lathe").mkdir(exist_ok=True)
    (ws / ".lathe" / "config.toml").write_text(
        "[[hooks.pre_tool]]\n"
        f"command = '''{_in_own_session(grandchild)} sleep 30'''\n"
        "timeout_s = 1\n"
    )
    fake_openai.enqueue(Reply(calls=[Call("bash", {"command": "touch ran"})]), Reply("ok"))

    result = run_against(fake_openai, ws, tmp_path, "--approval", "full", "--trust-project", "go")

    assert result.returncode == 0, result.stderr
    tool = next(m for m in fake_openai.chat_bodies()[1]["messages"] if m["role"] == "tool")
    assert "timed out" in tool["content"] and not (ws / "ran").exists()
    assert not process_alive(_pids(grandchild)[0])
