"""A served session stopped while its subagents work counts what they spent, as a
`lathe run` stopped so does."""

from __future__ import annotations

import time

from tests.subagents.test_task_tool import _project
from tests.subagents.test_what_a_child_leaves import two_children_that_hang, waiting_children


def test_an_aborted_run_counts_what_its_children_spent(served, fake_openai, tmp_path):
    # Its run_finished held the parent's own reply only.
    two_children_that_hang(fake_openai)
    with served.client() as client:
        session = client.create_session(
            str(_project(tmp_path)), model="m", base_url=fake_openai.base_url, approval="full"
        )
        client.send(session.id, "go")
        deadline = time.monotonic() + 60
        while waiting_children(fake_openai) < 2 and time.monotonic() < deadline:
            time.sleep(0.05)
        assert waiting_children(fake_openai) == 2
        client.abort(session.id)
        *_, end = client.events(session.id, until="run_finished")

    assert end.data["status"] == "interrupted"
    assert end.data["usage"]["input_tokens"] == 12 + 2 * 1000, end.data
