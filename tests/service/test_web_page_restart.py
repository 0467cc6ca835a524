"""The web page across a server restart (or a session stopped and served again): a call
a restart left waiting for its approval, and a message queued when the run stopped."""

from __future__ import annotations

import re
import socket

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

        page.reload()  # the replay draws the same, lathe's words as lathe's

        expect(transcript.get_by_test_id("run-status")).to_have_count(2)
        assert transcript.inner_text() == shown
        expect(transcript.get_by_test_id("user-message")).to_have_text(["fix add"])
        expect(transcript.get_by_test_id("lathe-message")).to_have_count(1)


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def test_a_message_queued_when_the_server_restarts_is_not_shown_queued_for_ever(
    tmp_path, fake_openai, page: Page
):
    # The server keeps a message still queued when it stops in the conversation, and
    # the session comes back idle with none queued: the page still said "Queued".
    port = _free_port()
    home = tmp_path / "home"
    ws = calc_workspace(tmp_path)
    fake_openai.enqueue(Reply("running it", calls=[Call("bash", {"command": "sleep 30"})]))
    with ServeProcess(home, "--port", str(port)) as first:
        with first.client() as client:
            session = client.create_session(str(ws), model="m", base_url=fake_openai.base_url)
        page.goto(f"{first.url}/#token={first.token}&session={session.id}")
        transcript = page.get_by_test_id("transcript")
        box = page.get_by_test_id("message-input")
        box.fill("first")
        page.get_by_test_id("message-send").click()
        expect(transcript.get_by_test_id("tool")).to_have_count(1)
        box.fill("IMPORTANT follow-up")
        page.get_by_test_id("message-send").click()
        expect(page.get_by_test_id("message-note")).to_have_text(
            "Queued: it runs after the current run."
        )

    with ServeProcess(home, "--port", str(port)):  # the page goes on at the same address
        note = page.get_by_test_id("message-note")
        expect(note).to_contain_text("kept in the conversation")
        expect(note).not_to_contain_text("Queued")
        expect(box).to_have_value("")  # the model reads it: sent again, it would twice


def test_a_queued_message_an_abort_drops_is_said_so_and_put_back_in_the_box(
    served, fake_openai, page: Page, tmp_path
):
    # Abort drops what is queued: the page said only "Stopped the run.", and the text
    # was gone.
    ws = calc_workspace(tmp_path)
    fake_openai.enqueue(Reply("try", calls=[Call("bash", {"command": "touch a.txt"})]))
    with served.client() as client:
        session = client.create_session(
            str(ws), model="m", base_url=fake_openai.base_url, approval="ask"
        )
    page.goto(f"{served.url}/#token={served.token}&session={session.id}")
    box = page.get_by_test_id("message-input")
    box.fill("go")
    page.get_by_test_id("message-send").click()
    expect(page.get_by_test_id("pending-approvals").get_by_test_id("approval-card")).to_have_count(
        1
    )
    box.fill("queued follow-up")
    page.get_by_test_id("message-send").click()
    note = page.get_by_test_id("message-note")
    expect(note).to_have_text("Queued: it runs after the current run.")

    page.get_by_test_id("abort").click()

    expect(note).to_have_text(
        "Stopped the run. Your queued message did not run: it is back in the box."
    )
    expect(box).to_have_value("queued follow-up")
    expect(page.get_by_test_id("transcript").get_by_test_id("run-status")).to_have_count(1)
    assert len(fake_openai.chat_bodies()) == 1
