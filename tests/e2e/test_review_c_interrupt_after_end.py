"""Ctrl-C after `lathe run --json` showed its last `run_finished`, against the fake model.

The run's end shown, lathe closes its MCP servers; a Ctrl-C then printed a second
`run_finished`, `interrupted` with 0 turns, after the `verified` one, and exited 130.
The run was over: the interrupt now prints nothing more and the exit code is the shown
end's.
"""

from __future__ import annotations

import contextlib
import os
import shlex
import signal
import subprocess
import sys
from pathlib import Path

from tests.e2e.test_interrupted_json_end import _lines
from tests.e2e.test_mcp import FAKE_SERVER, user_config
from tests.e2e.test_run_edges import TASK, _argv, _env, _workspace
from tests.fakes.openai_server import Reply
from tests.fakes.user_config import user_config_file
from tests.waiting import while_running


def _slow_to_close(tmp_path: Path) -> dict:
    """An MCP server that, once lathe closes its input, says so in `closing` and then
    takes its time to go (SIGTERM ignored): lathe is still closing it."""
    server = shlex.join([sys.executable, FAKE_SERVER])
    script = f'echo $$ > {tmp_path / "sh.pid"}; {server}; trap "" TERM; touch {tmp_path / "closing"}; exec sleep 20'  # noqa: E501
    return {"command": "sh", "args": ["-c", script]}


def _interrupted_while_closing(fake_openai, tmp_path: Path, *args: str):
    """A run whose model finished, Ctrl-C'd while lathe closes its MCP server: (exit
    code, stdout, stderr)."""
    ws = _workspace(tmp_path)
    user_config(tmp_path, {"slow": _slow_to_close(tmp_path)})
    env = {**_env(tmp_path), "LATHE_CONFIG": user_config_file(tmp_path / "config.toml")}
    fake_openai.enqueue(Reply("done"))
    process = subprocess.Popen(
        _argv(fake_openai, ws, "--approval", "full", "--verify", "true", *args, TASK),
        cwd=tmp_path, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        stdin=subprocess.DEVNULL, text=True,
    )  # fmt: skip
    try:
        while_running(process, (tmp_path / "closing").exists, "the MCP server was never closed")
        process.send_signal(signal.SIGINT)
        out, errors = process.communicate(timeout=60)
    finally:
        if process.poll() is None:
            process.kill()
        shell = tmp_path / "sh.pid"  # the server's shell, by then its `sleep`
        if shell.exists():
            with contextlib.suppress(ProcessLookupError, ValueError):
                os.kill(int(shell.read_text()), signal.SIGKILL)
    return process.returncode, out, errors


def test_ctrl_c_after_the_last_end_adds_no_second_end(tmp_path, fake_openai):
    code, out, errors = _interrupted_while_closing(fake_openai, tmp_path, "--json")

    ends = [e for e in _lines(out) if e["type"] == "run_finished"]
    assert [e["status"] for e in ends] == ["verified"], (ends, errors)
    assert _lines(out)[-1] == ends[-1]
    assert code == 0, errors
    assert "Traceback" not in errors, errors


def test_ctrl_c_after_the_last_end_on_the_terminal_keeps_its_end(tmp_path, fake_openai):
    code, out, errors = _interrupted_while_closing(fake_openai, tmp_path)

    assert code == 0, errors
    assert out.strip() == "done", out
    assert "resume with" not in errors, errors
    assert "Traceback" not in errors, errors
