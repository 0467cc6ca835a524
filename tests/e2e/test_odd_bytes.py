"""Bytes that are not UTF-8 where lathe reads text from the user or the workspace. Each
once ended a run in a traceback before its first model call:

- a task given on the command line in Latin-1 (`caf\\xe9`): the session could not
  write it;
- the same task on standard input;
- a file name in Latin-1 in the workspace: the prompt's file list could not decode
  ripgrep's output, and no run or `--continue` could start there.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

from tests.e2e.test_run_edges import _argv, _env
from tests.fakes.openai_server import Reply


def _run(server, ws: Path, tmp_path: Path, task: bytes | None, stdin: bytes = b""):
    argv = [*_argv(server, ws, "--json"), *([task] if task is not None else [])]
    return subprocess.run(
        argv, cwd=tmp_path, env=_env(tmp_path), capture_output=True, input=stdin, timeout=120
    )


def _sent_task(server) -> str:
    [user] = [m for m in server.chat_bodies()[-1]["messages"] if m["role"] == "user"][:1]
    return user["content"]


def test_a_task_on_the_command_line_that_is_not_utf8_runs(tmp_path, fake_openai):
    ws = tmp_path / "ws"
    ws.mkdir()
    fake_openai.enqueue(Reply("Fixed."))
    done = _run(fake_openai, ws, tmp_path, b"fix the caf\xe9 bug")
    assert done.returncode == 0, done.stderr.decode()
    assert "fix the caf\ufffd bug" in _sent_task(fake_openai)
    finished = json.loads(done.stdout.splitlines()[-1])
    assert finished["status"] == "unverified"


def test_a_task_on_stdin_that_is_not_utf8_runs(tmp_path, fake_openai):
    ws = tmp_path / "ws"
    ws.mkdir()
    fake_openai.enqueue(Reply("Fixed."))
    done = _run(fake_openai, ws, tmp_path, None, stdin=b"fix the caf\xe9 bug\n")
    assert done.returncode == 0, done.stderr.decode()
    assert "fix the caf\ufffd bug" in _sent_task(fake_openai)


def test_a_file_name_that_is_not_utf8_leaves_the_run_able_to_start(tmp_path, fake_openai):
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "app.py").write_text("x = 1\n")
    with open(os.path.join(os.fsencode(ws), b"caf\xe9.py"), "w") as latin1:
        latin1.write("y = 2\n")
    fake_openai.enqueue(Reply("Looked."))
    done = _run(fake_openai, ws, tmp_path, b"look around")
    assert done.returncode == 0, done.stderr.decode()
    system = fake_openai.chat_bodies()[-1]["messages"][0]["content"]
    assert "app.py" in system


def test_a_command_holding_a_nul_byte_is_refused_in_words_the_model_can_act_on(
    tmp_path, fake_openai
):
    # It came back as "internal error in the bash tool: ValueError: embedded null byte".
    from tests.fakes.openai_server import Call

    ws = tmp_path / "ws"
    ws.mkdir()
    fake_openai.enqueue(Reply(calls=[Call("bash", {"command": "echo a\u0000b"})]), Reply("Ok."))
    done = _run(fake_openai, ws, tmp_path, b"print it")
    assert done.returncode == 0, done.stderr.decode()
    [result] = [m for m in fake_openai.chat_bodies()[-1]["messages"] if m["role"] == "tool"]
    assert "NUL byte" in result["content"], result["content"]
    assert "internal error" not in result["content"], result["content"]
