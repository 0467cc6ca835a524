"""The web page across a server restart (or a session stopped and served again): a call
a restart left waiting for its approval, and a message queued when the run stopped."""

from __future__ import annotations

import re

from playwright.sync_api import Page, expect
from tests.browser import needs_chromium
from tests.fakes.openai_server import Call, Reply
from tests.service.scripts import calc_workspace
from tests.service.server import ServeProcess

pytestmark = needs_chromium


def test_a_call_approved_after_a_restart_is_one_block_and_lathes_continue_is_not_the_users(
    served, fake_openai, page: Page, tmp_path
):
    # The paused call is started again with the same call id: the page drew a second
    # block and left the first running for ever, and drew lathe's "Continue the task
    # from where you stopped." as a message the person had sent.
    ws = calc_workspace(tmp_path)
    edit = Call("edit", {"path": "calc.py", "old_string": "a - b", "new_string": "a + b"})
    fake_openai.enqueue(Reply("I will fix add.", calls=[edit]), Reply("Fixed add."))
    with served.client() as client:
        session = client.create_session(
            str(ws), model="m", base_url=fake_openai.base_url, approval="ask"
        )
        client.send(session.id, "fix add")
        list(client.events(session.id, until="approval_requested"))
    served.stop()

    with ServeProcess(served.home) as again:
        page.goto(f"{again.url}/#token={again.token}&session={session.id}")
        page.get_by_test_id("pending-approvals").get_by_test_id("approve-once").click()

        transcript = page.get_by_test_id("transcript")
        expect(transcript.get_by_test_id("run-status")).to_have_text(["interrupted", "unverified"])
        tool = transcript.get_by_test_id("tool")
        expect(tool).to_have_count(1)
        expect(tool).to_have_class(re.compile(r"\bdone\b"))
        expect(tool.get_by_test_id("tool-summary")).to_have_text("edit calc.py → +1 -1")
        expect(transcript.get_by_test_id("user-message")).to_have_text(["fix add"])
        expect(transcript.get_by_test_id("lathe-message")).to_have_text(
            "Continue the task from where you stopped."
        )
        shown = transcript.inner_text()

        page.reload()  # the replay draws the same

        expect(transcript.get_by_test_id("run-status")).to_have_count(2)
        assert transcript.inner_text() == shown
