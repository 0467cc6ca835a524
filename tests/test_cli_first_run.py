"""What a new user meets first, each reproduced with the real CLI:

- input piped to `lathe run` with a task was dropped without a word (`git diff | lathe
  run "review this"` sent only the instruction);
- `lathe run -` sent the task "-";
- a subcommand's option given before it (`lathe --json run x`) was "no such option",
  with click's guess of an unrelated one (`Did you mean '--version'?`);
- `lathe undo` after turns that changed nothing blamed turns not having run there.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from tests.e2e.test_run_edges import _argv, _env, _workspace
from tests.fakes.openai_server import Reply

from lathe.ui import cli

TASK = "review this"
DIFF = "diff --git a/app.py b/app.py\n-value = 1\n+total = 1\n"


def _run_with_input(server, ws: Path, tmp_path: Path, stdin, *args: str):
    return subprocess.run(
        _argv(server, ws, *args), cwd=tmp_path, env=_env(tmp_path), capture_output=True,
        text=True, timeout=120, **stdin,
    )  # fmt: skip


def _user_message(server) -> str:
    messages = server.chat_bodies()[0]["messages"]
    (user,) = [m for m in messages if m["role"] == "user"]
    return user["content"]


def test_piped_input_rides_along_with_the_task(tmp_path, fake_openai):
    ws = _workspace(tmp_path)
    fake_openai.enqueue(Reply("Looks fine."))

    result = _run_with_input(fake_openai, ws, tmp_path, {"input": DIFF}, TASK)

    assert result.returncode == 0, result.stderr
    message = _user_message(fake_openai)
    assert message.startswith(TASK)
    assert DIFF.strip() in message
    assert message.index("<stdin>") < message.index(DIFF.strip()) < message.index("</stdin>")


@pytest.mark.parametrize("stdin", [{"input": ""}, {"stdin": subprocess.DEVNULL}])
def test_an_empty_stdin_changes_nothing(tmp_path, fake_openai, stdin):
    ws = _workspace(tmp_path)
    fake_openai.enqueue(Reply("Looks fine."))

    result = _run_with_input(fake_openai, ws, tmp_path, stdin, TASK)

    assert result.returncode == 0, result.stderr
    assert _user_message(fake_openai) == TASK
    assert "standard input" not in result.stderr


def test_huge_piped_input_is_cut_and_says_so(tmp_path, fake_openai):
    ws = _workspace(tmp_path)
    fake_openai.enqueue(Reply("Looks fine."))
    huge = "".join(f"log line {n}\n" for n in range(200_000))  # ~3 MB

    result = _run_with_input(fake_openai, ws, tmp_path, {"input": huge}, TASK)

    assert result.returncode == 0, result.stderr
    message = _user_message(fake_openai)
    assert len(message.encode()) < cli._PIPED_MAX_BYTES + 2_000
    assert "log line 0\n" in message and "log line 199999\n" in message
    assert "bytes omitted" in message
    assert f"{len(huge.encode()):,} bytes" in message


def test_a_pipe_nobody_writes_to_holds_the_run_no_longer_than_the_wait(monkeypatch, capsys):
    read_end, write_end = os.pipe()  # never written, never closed: a CI runner's stdin
    try:
        with open(read_end, closefd=False) as never:
            monkeypatch.setattr(sys, "stdin", never)
            assert cli._piped_input(wait_s=0.2) is None
    finally:
        os.close(read_end)
        os.close(write_end)
    (line,) = capsys.readouterr().err.splitlines()
    assert line.startswith("lathe: nothing came on standard input"), line
    assert "/dev/null" in line


def test_a_dash_reads_the_task_from_stdin(tmp_path, fake_openai):
    ws = _workspace(tmp_path)
    fake_openai.enqueue(Reply("Hi."))

    result = _run_with_input(fake_openai, ws, tmp_path, {"input": "from dash\n"}, "-")

    assert result.returncode == 0, result.stderr
    assert _user_message(fake_openai).strip() == "from dash"


def test_a_dash_with_nothing_on_stdin_is_one_line_error(tmp_path, fake_openai):
    ws = _workspace(tmp_path)

    result = _run_with_input(fake_openai, ws, tmp_path, {"stdin": subprocess.DEVNULL}, "-")

    assert result.returncode == 2
    (line,) = result.stderr.splitlines()
    assert line.startswith("lathe: run -: "), line
    assert "empty" in line
    assert fake_openai.chat_bodies() == []


def test_a_dash_on_a_terminal_is_one_line_error(tmp_path, fake_openai):
    ws = _workspace(tmp_path)
    terminal, other_end = os.openpty()
    try:
        result = _run_with_input(fake_openai, ws, tmp_path, {"stdin": terminal}, "-")
    finally:
        os.close(terminal)
        os.close(other_end)

    assert result.returncode == 2
    (line,) = result.stderr.splitlines()
    assert line.startswith("lathe: run -: the task comes on standard input"), line
    assert "terminal" in line


def test_piped_input_rides_along_with_a_prompt_command(tmp_path, fake_openai):
    ws = _workspace(tmp_path)
    (ws / ".lathe" / "commands").mkdir(parents=True)
    (ws / ".lathe" / "commands" / "review.md").write_text("Review $ARGUMENTS\n")
    fake_openai.enqueue(Reply("Looks fine."))

    result = _run_with_input(
        fake_openai, ws, tmp_path, {"input": DIFF}, "--command", "review", "closely"
    )

    assert result.returncode == 0, result.stderr
    message = _user_message(fake_openai)
    assert message.startswith("Review closely")
    assert DIFF.strip() in message


def _lathe(tmp_path: Path, *args: str) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("LATHE_", "OPENAI_"))}
    env["LATHE_HOME"] = str(tmp_path / "home")
    return subprocess.run(
        [sys.executable, "-m", "lathe", *args], cwd=tmp_path, env=env, capture_output=True,
        text=True, timeout=120, stdin=subprocess.DEVNULL,
    )  # fmt: skip


@pytest.mark.parametrize(
    ("args", "owner"),
    [
        (("--json", "run", "x"), "`lathe run`"),
        (("--attempts", "2", "run", "x"), "`lathe run`"),
        (("--all", "sessions", "list"), "`lathe sessions list`"),
        (("--force", "undo"), "`lathe undo`"),
        (("--live", "doctor"), "`lathe doctor`"),
    ],
)
def test_a_subcommands_option_before_it_says_where_it_goes(tmp_path, args, owner):
    result = _lathe(tmp_path, *args)

    assert result.returncode == 2
    (line,) = result.stderr.splitlines()
    assert line.startswith(f"lathe: {args[0]} is an option of "), line
    assert owner in line
    assert "after" in line
    assert "did you mean" not in line.lower(), line


def test_an_option_no_command_takes_is_still_unknown(tmp_path):
    result = _lathe(tmp_path, "--frobnicate", "run", "x")

    assert result.returncode == 2
    assert "no such option '--frobnicate'" in result.stderr


def test_undo_with_no_checkpoints_says_turns_record_them_when_files_change(tmp_path):
    ws = tmp_path / "ws"
    ws.mkdir()

    result = _lathe(tmp_path, "undo", "-C", str(ws))

    assert result.returncode == 2
    assert "when an agent turn changes files there" in result.stderr, result.stderr
