"""The same `task` call, through `lathe run` against the fake model: asked again after
each edit, it was counted as the same file change made over and over, and the run ended
`stuck` ("kept repeating the same task call") while the edits went on. A child's result
depends on the workspace, so asking again after a change is no loop; asking again with
nothing between still is."""

from __future__ import annotations

import json

from tests.fakes.openai_server import Call, Reply
from tests.subagents.test_task_tool import Script, _edit, _project, _run

_BRIEF = {"description": "check", "prompt": "[child C] read a.py and say A", "agent": "explore"}


def _check(n: int) -> Call:
    return Call("task", _BRIEF, id=f"call_check_{n}")


def _end(stdout: str) -> dict:
    events = [json.loads(line) for line in stdout.splitlines()]
    return next(e for e in events if e["type"] == "run_finished")


def test_the_same_task_after_each_edit_is_not_a_stall(tmp_path, fake_openai) -> None:
    ws = _project(tmp_path)
    parent = []
    for n in range(1, 5):
        parent += [
            Reply(calls=[_check(n)]),
            Reply(calls=[_edit("a.py", f"A = {n}", f"A = {n + 1}")]),
        ]
    fake_openai.responder = Script(
        parent=[*parent, Reply("A is 5 now.")], children={"[child C]": [Reply("A is what it is")]}
    )

    result = _run(fake_openai, ws, tmp_path, "--approval", "full", "count A up")

    end = _end(result.stdout)
    assert end["status"] == "unverified", end
    assert '"stall_nudge"' not in result.stdout
    assert result.returncode == 0, result.stderr[-3000:]
    assert (ws / "a.py").read_text() == "A = 5\n"


def test_the_same_task_with_nothing_between_is_still_a_stall(tmp_path, fake_openai) -> None:
    ws = _project(tmp_path)
    fake_openai.responder = Script(
        parent=[Reply(calls=[_check(n)]) for n in range(1, 8)] + [Reply("done")],
        children={"[child C]": [Reply("A is 1")]},
    )

    result = _run(fake_openai, ws, tmp_path, "--approval", "full", "look at A")

    end = _end(result.stdout)
    assert end["status"] == "stuck", end
    assert '"stall_nudge"' in result.stdout
    assert result.returncode == 1
