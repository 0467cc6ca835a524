"""The reason a stall gives names what the model repeated, through `lathe run` against
the fake model: a cycle of reads and greps ended "the model kept repeating the same read
call", as if one call had been repeated."""

from __future__ import annotations

import json
from pathlib import Path

from tests.e2e.test_run_edges import lathe_run
from tests.fakes.openai_server import Call, Reply


def _end(fake_openai, tmp_path: Path, replies: list[Reply]) -> dict:
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "app.py").write_text("value = 1\n")
    fake_openai.enqueue(*replies)
    done = lathe_run(fake_openai, ws, tmp_path, "--json", "Find the value")
    events = [json.loads(line) for line in done.stdout.splitlines() if line.startswith("{")]
    assert events and events[-1]["type"] == "run_finished", done.stderr[-3000:]
    assert done.returncode == 1
    return events[-1]


def test_a_cycle_of_calls_is_named_as_a_cycle(tmp_path, fake_openai):
    read = Reply(calls=[Call("read", {"path": "app.py"})])
    grep = Reply(calls=[Call("grep", {"pattern": "value"})])

    end = _end(fake_openai, tmp_path, [read, grep] * 6)

    assert end["status"] == "stuck", end
    cycle = "the model kept repeating the same 2 calls"
    assert end["reason"] in (f"{cycle} (read, grep)", f"{cycle} (grep, read)"), end


def test_one_call_in_a_row_is_named_by_its_tool(tmp_path, fake_openai):
    read = Reply(calls=[Call("read", {"path": "app.py"})])

    end = _end(fake_openai, tmp_path, [read] * 6)

    assert end["status"] == "stuck", end
    assert end["reason"] == "the model kept repeating the same read call", end
