"""`lathe run` with a model that writes its tool calls as text, slightly malformed or cut
by the output limit. Each was taken as "done": with --verify the model was told its
check failed "though it said it was done" until the run was stuck; without, the run
ended exit 0 "unverified" with the raw `<tool_call>` as its answer and nothing changed."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from tests.e2e.test_run_edges import lathe_run
from tests.fakes.openai_server import Reply

FIXED = "def add(a, b):\n    return a + b\n"
VERIFY = ("--verify", "grep -q 'a + b' calc.py")


def _workspace(tmp_path: Path) -> Path:
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "calc.py").write_text("def add(a, b):\n    return a - b\n")
    return ws


def _events(run) -> list[dict]:
    return [json.loads(line) for line in run.stdout.splitlines() if line.startswith("{")]


def _finished(run) -> dict:
    return next(e for e in _events(run) if e["type"] == "run_finished")


def _notes(body: dict) -> list[str]:
    return [m["content"] for m in body["messages"] if m["role"] == "user"]


FIX = {"path": "calc.py", "old_string": "a - b", "new_string": "a + b"}
WHOLE_FILE = {"path": "calc.py", "old_string": "def add(a, b):\n    return a - b",
              "new_string": "def add(a, b):\n    return a + b"}  # fmt: skip


@pytest.mark.parametrize(
    "text",
    [
        # a line break written raw inside a string
        '<tool_call>\n{"name": "edit", "arguments": {"path": "calc.py", "old_string": '
        '"def add(a, b):\n    return a - b", "new_string": "def add(a, b):\n    return a + b"}}'
        "\n</tool_call>",
        '<tool_call>\n{"name": "edit", "arguments": {"path": "calc.py", "old_string": "a - b", '
        '"new_string": "a + b",}}\n</tool_call>',
        f"<tool_call>\n{json.dumps({'name': 'functions.edit', 'arguments': FIX})}\n</tool_call>",
        f"<tool_call>\n{json.dumps({'name': 'edit', 'arguments': FIX})}",  # never closed
    ],
    ids=["raw-newline", "trailing-comma", "functions-prefix", "unclosed"],
)
def test_a_slightly_malformed_text_call_is_run(tmp_path, fake_openai, text):
    ws = _workspace(tmp_path)
    fake_openai.enqueue(Reply(text), Reply("Fixed add."))
    run = lathe_run(fake_openai, ws, tmp_path, "--approval", "full", "--json", *VERIFY, "Fix add")
    assert _finished(run)["status"] == "verified", run.stderr
    assert (ws / "calc.py").read_text() == FIXED


def test_a_text_call_that_cannot_be_read_is_sent_back_not_taken_as_done(tmp_path, fake_openai):
    ws = _workspace(tmp_path)
    single_quoted = "<tool_call>\n{'name': 'edit', 'arguments': {'path': 'calc.py'}}\n</tool_call>"
    right = f"<tool_call>\n{json.dumps({'name': 'edit', 'arguments': FIX})}\n</tool_call>"
    fake_openai.enqueue(Reply(single_quoted), Reply(right), Reply("Fixed add."))
    run = lathe_run(fake_openai, ws, tmp_path, "--approval", "full", "--json", "Fix add")
    assert run.returncode == 0, run.stderr
    assert (ws / "calc.py").read_text() == FIXED
    second = fake_openai.chat_bodies()[1]
    told = _notes(second)[-1]
    assert "could not be read" in told and "valid JSON" in told
    assert "said you were done" not in told
    shown = [m["content"] for m in second["messages"] if m["role"] == "assistant"]
    assert shown == [single_quoted]  # the model sees what it wrote
    notices = [e["message"] for e in _events(run) if e["type"] == "notice"]
    assert any("written as text could not be read" in n for n in notices), notices


def test_three_unreadable_text_calls_in_a_row_end_the_run_stuck(tmp_path, fake_openai):
    ws = _workspace(tmp_path)
    broken = Reply("<tool_call>\n{'name': 'edit'}\n</tool_call>")
    fake_openai.enqueue(broken, broken, broken, Reply("never asked"))
    run = lathe_run(fake_openai, ws, tmp_path, "--approval", "full", "--json", "Fix add")
    end = _finished(run)
    assert end["status"] == "stuck", run.stderr
    assert "written as text" in end["reason"]
    assert len(fake_openai.chat_bodies()) == 3


@pytest.mark.parametrize("verify", [VERIFY, ()], ids=["verify", "no-verify"])
def test_a_text_call_cut_by_the_output_limit_is_asked_again_whole(tmp_path, fake_openai, verify):
    ws = _workspace(tmp_path)
    whole = f"<tool_call>\n{json.dumps({'name': 'edit', 'arguments': WHOLE_FILE})}\n</tool_call>"
    cut_at = whole.index('"new_') + len('"new_')
    fake_openai.enqueue(
        Reply(whole[:cut_at], finish_reason="length"),
        Reply(whole),
        Reply("Fixed add."),
    )
    run = lathe_run(fake_openai, ws, tmp_path, "--approval", "full", "--json", *verify, "Fix")
    told = _notes(fake_openai.chat_bodies()[1])[-1]
    assert "Continue where you stopped" not in told
    assert "not run" in told and "whole call again" in told
    assert run.returncode == 0, run.stderr
    assert (ws / "calc.py").read_text() == FIXED
