"""A child that only reads, where children cannot change files, through `lathe run`
against the fake model: in headless `ask` and in `read-only` mode the task tool was
offered ("use them to read and explore") but the gate refused every call, `explore`
too, judging `task` a tool that changes the workspace whatever profile it named."""

from __future__ import annotations

import pytest
from tests.fakes.openai_server import Call, Reply
from tests.subagents.test_task_tool import Script, _project, _results, _run, _task


def _task_description(server) -> str:
    tools = server.chat_bodies()[0]["tools"]
    return next(t["function"]["description"] for t in tools if t["function"]["name"] == "task")


@pytest.mark.parametrize("mode", ["ask", "read-only"])
def test_an_explore_child_runs_where_children_cannot_change_files(
    tmp_path, fake_openai, mode
) -> None:
    ws = _project(tmp_path)
    fake_openai.responder = Script(
        parent=[Reply(calls=[_task("e", "[child E] look", agent="explore")]), Reply("ok")],
        children={"[child E]": [Reply(calls=[Call("read", {"path": "a.py"})]),
                                Reply("A is one")]},
    )  # fmt: skip

    result = _run(fake_openai, ws, tmp_path, "--approval", mode, "look around")

    assert result.returncode == 0, result.stderr[-3000:]
    told = _results(result.stdout)["call_e"]
    assert not told["is_error"], told["output"]
    assert "A is one" in told["output"]
    description = _task_description(fake_openai)
    assert "explore" in description and ".." not in description, description


def test_a_child_that_may_change_files_is_refused_in_read_only_mode_as_told(
    tmp_path, fake_openai
) -> None:
    ws = _project(tmp_path)
    fake_openai.responder = Script(
        parent=[Reply(calls=[_task("g", "[child G] edit")]), Reply("ok")],
        children={"[child G]": [Reply("should not run")]},
    )

    result = _run(fake_openai, ws, tmp_path, "--approval", "read-only", "edit")

    assert result.returncode == 0, result.stderr[-3000:]
    told = _results(result.stdout)["call_g"]
    assert told["is_error"] and "read-only" in told["output"], told["output"]
    description = _task_description(fake_openai)
    assert "only explore" in description and ".." not in description, description
