"""A served session stopped while its subagents work counts what they spent, as a
`lathe run` stopped so does."""

from __future__ import annotations

import time

from tests.fakes.openai_server import Hang, Reply
from tests.subagents.test_task_tool import Script, _edit, _first_user_text, _project, _task


def _waiting_children(fake_openai) -> int:
    return sum(
        1
        for body in fake_openai.chat_bodies()
        if "[child" in _first_user_text(body)
        and sum(1 for m in body["messages"] if m["role"] == "assistant") == 1
    )


def test_an_aborted_run_counts_what_its_children_spent(served, fake_openai, tmp_path):
    # Its run_finished held the parent's own reply only.
    child = {"prompt_tokens": 1000, "completion_tokens": 100, "total_tokens": 1100}
    fake_openai.responder = Script(
        parent=[Reply(calls=[_task("a", "[child A] edit"), _task("b", "[child B] edit")])],
        children={
            "[child A]": [Reply(calls=[_edit("a.py", "A = 1", "A = 2")], usage=child), Hang(120)],
            "[child B]": [Reply(calls=[_edit("b.py", "B = 1", "B = 2")], usage=child), Hang(120)],
        },
    )
    with served.client() as client:
        session = client.create_session(
            str(_project(tmp_path)), model="m", base_url=fake_openai.base_url, approval="full"
        )
        client.send(session.id, "go")
        deadline = time.monotonic() + 60
        while _waiting_children(fake_openai) < 2 and time.monotonic() < deadline:
            time.sleep(0.05)
        assert _waiting_children(fake_openai) == 2
        client.abort(session.id)
        *_, end = client.events(session.id, until="run_finished")

    assert end.data["status"] == "interrupted"
    assert end.data["usage"]["input_tokens"] == 12 + 2 * 1000, end.data
