"""End to end: a server that never answers the handshake does not hold lathe up when it
ends — Ctrl-C while the run (or `lathe mcp list`) waits for it, or the end of an
`--mcp-eager` run that started it in the background. The graceful close of a client
cannot reach a server still in its handshake; waiting for it had cost 8 s each time."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from tests.e2e.test_mcp import assert_server_gone, run, stdio_server, user_config, workspace
from tests.fakes.openai_server import Reply
from tests.fakes.user_config import user_config_file

# Seconds from Ctrl-C (or the last answer) to lathe's exit: stopping the hung server at
# once takes well under one; the wait it replaced was 8.
PROMPT = 4.0


def _start(tmp_path: Path, *args: str) -> subprocess.Popen:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("LATHE_", "OPENAI_"))}
    env |= {
        "OPENAI_API_KEY": "sk-test", "LATHE_HOME": str(tmp_path / "home"),
        "LATHE_CONFIG": user_config_file(tmp_path / "config.toml"),
    }  # fmt: skip
    return subprocess.Popen(
        [sys.executable, "-m", "lathe", *args], cwd=tmp_path, env=env,
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip


def _interrupt_once_started(tmp_path: Path, process: subprocess.Popen) -> tuple[float, str]:
    """Ctrl-C once the server is running (its pid file written); the seconds lathe then
    took to exit, and its stderr."""
    deadline = time.monotonic() + 60
    while not (tmp_path / "server.pid").exists():
        assert process.poll() is None, process.communicate()
        assert time.monotonic() < deadline, "the MCP server was never started"
        time.sleep(0.05)
    time.sleep(0.5)  # into the handshake it will never answer
    process.send_signal(signal.SIGINT)
    interrupted = time.monotonic()
    _, stderr = process.communicate(timeout=60)
    return time.monotonic() - interrupted, stderr


def _hung_server(tmp_path: Path) -> dict:
    hang = tmp_path / "hang"
    return stdio_server(tmp_path, "--hang-if", str(hang), startup_timeout_s=30)


def test_ctrl_c_while_a_run_waits_for_a_server_to_start_ends_the_run_at_once(tmp_path, fake_openai):
    ws = workspace(tmp_path)
    (tmp_path / "hang").touch()
    user_config(tmp_path, {"srv": _hung_server(tmp_path)})
    fake_openai.enqueue(Reply("Never asked."))
    process = _start(
        tmp_path, "run", "--model", "m", "--base-url", fake_openai.base_url, "-C", str(ws), "go"
    )

    took, stderr = _interrupt_once_started(tmp_path, process)

    assert process.returncode == 130, stderr
    assert took < PROMPT, f"lathe took {took:.1f} s to stop after Ctrl-C"
    assert fake_openai.chat_bodies() == []
    assert_server_gone(tmp_path)


def test_ctrl_c_while_mcp_list_waits_for_a_server_ends_it_at_once(tmp_path):
    ws = workspace(tmp_path)
    (tmp_path / "hang").touch()
    user_config(tmp_path, {"srv": _hung_server(tmp_path)})
    process = _start(tmp_path, "mcp", "list", "-C", str(ws))

    took, stderr = _interrupt_once_started(tmp_path, process)

    assert process.returncode != 0, stderr
    assert took < PROMPT, f"lathe mcp list took {took:.1f} s to stop after Ctrl-C"
    assert_server_gone(tmp_path)


def test_an_eager_run_ends_at_once_though_its_server_is_still_starting(tmp_path, fake_openai):
    ws = workspace(tmp_path)
    user_config(tmp_path, {"srv": _hung_server(tmp_path)})
    fake_openai.enqueue(Reply("Listed."))
    assert run(fake_openai, tmp_path, ws).returncode == 0  # its tools are in the cache now
    (tmp_path / "hang").touch()
    (tmp_path / "server.pid").unlink()
    answered: list[float] = []

    def answer(body: dict) -> Reply:
        answered.append(time.monotonic())
        return Reply("A quick answer, no MCP tool needed.")

    fake_openai.responder = answer

    result = run(fake_openai, tmp_path, ws, "--mcp-eager")
    ended = time.monotonic()

    assert result.returncode == 0, result.stderr
    assert (tmp_path / "server.pid").exists()  # started in the background, never ready
    took = ended - answered[-1]
    assert took < PROMPT, f"the run took {took:.1f} s to end after its answer"
    assert_server_gone(tmp_path)
