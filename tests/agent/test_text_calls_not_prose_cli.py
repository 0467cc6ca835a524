"""`lathe run` whose model answers with prose or a code sample that shows a tool call.
Reading text-written calls tolerantly ran a fenced sample (`make deploy`) and an
unclosed tag after "write:", and an answer mentioning `<tool_call>` could never end the
run: it was asked again until stuck, and a long one cut by the output limit was not
continued."""

from __future__ import annotations

import json

import pytest
from tests.agent.test_text_call_edges_cli import _events, _finished, _notes
from tests.e2e.test_run_edges import lathe_run
from tests.fakes.openai_server import Reply


def _touch(name: str) -> str:
    return json.dumps({"name": "bash", "arguments": {"command": f"touch {name}"}})


SAMPLES = {
    "fenced-sample-then-text": '```json\n{"name": "Bash", "arguments": {"command": '
    '"touch DEPLOYED"}}\n```\nThis is the format of a call.',
    "fenced-exact-name-then-text": f"```json\n{_touch('DEPLOYED')}\n```\nThat is a call.",
    "unclosed-after-write": f"To call a tool, write:\n<tool_call>{_touch('DEPLOYED')}",
    "mentions-the-tag": "Done. Qwen models write `<tool_call>` tags when the server has no "
    "parser; lathe now reads them.",
    "mentions-the-closing-tag": "The parser stops at `</tool_call>` now.",
    "package-json": '```json\n{"name": "read", "version": "1.0.0"}\n```',
}


@pytest.mark.parametrize("text", SAMPLES.values(), ids=SAMPLES.keys())
def test_an_answer_showing_a_call_ends_the_run_with_nothing_run(tmp_path, fake_openai, text):
    ws = tmp_path / "ws"
    ws.mkdir()
    fake_openai.enqueue(Reply(text), Reply("never asked"))
    run = lathe_run(fake_openai, ws, tmp_path, "--approval", "full", "--json", "Explain it")
    assert not (ws / "DEPLOYED").exists()
    assert run.returncode == 0, run.stderr
    end = _finished(run)
    assert end["status"] == "unverified", end
    assert end["answer"] == text
    assert len(fake_openai.chat_bodies()) == 1
    assert not [e for e in _events(run) if e["type"].startswith("tool")]


def test_a_cut_answer_mentioning_the_tag_is_continued(tmp_path, fake_openai):
    ws = tmp_path / "ws"
    ws.mkdir()
    start = "Qwen models write `<tool_call>` tags when the server has no parser, and th"
    fake_openai.enqueue(Reply(start, finish_reason="length"), Reply("e rest."))
    run = lathe_run(fake_openai, ws, tmp_path, "--approval", "full", "--json", "Explain it")
    assert run.returncode == 0, run.stderr
    told = _notes(fake_openai.chat_bodies()[1])[-1]
    assert "Continue where you stopped" in told
    assert "whole call again" not in told
    assert _finished(run)["answer"] == start + "e rest."
