"""The web page `lathe serve` serves at `/`, driven in a real headless Chromium: the token
taken from the URL fragment (or asked for), a session started from the form, its
transcript streamed, an approval answered on the page, the diff and the run's status,
the same transcript replayed after a reload, and a stream that drops picked up with
Last-Event-ID without losing or repeating an event."""

from __future__ import annotations

import json
import re
import sys

from playwright.sync_api import Page, expect
from tests.browser import needs_chromium
from tests.fakes.openai_server import Call, Reply
from tests.service.scripts import calc_workspace

pytestmark = needs_chromium


def test_a_task_started_on_the_page_asks_for_approval_and_ends_verified(
    served, fake_openai, page: Page, tmp_path
):
    ws = calc_workspace(tmp_path)
    edit = Call("edit", {"path": "calc.py", "old_string": "a - b", "new_string": "a + b"})
    fake_openai.enqueue(Reply("I will fix add.", calls=[edit]), Reply("Fixed add."))

    page.goto(f"{served.url}/#token={served.token}")
    expect(page.get_by_test_id("new-session-form")).to_be_visible()
    expect(page).not_to_have_url(re.compile("token"))  # kept in sessionStorage only

    page.get_by_test_id("new-workspace").fill(str(ws))
    page.get_by_test_id("new-model").fill("m")
    page.get_by_test_id("new-base-url").fill(fake_openai.base_url)
    page.get_by_test_id("new-approval").select_option("ask")
    page.get_by_test_id("new-verify").fill(f"{sys.executable} check.py")
    page.get_by_test_id("new-session-submit").click()
    expect(page.get_by_test_id("session-row")).to_have_count(1)
    expect(page.get_by_test_id("session-title")).to_contain_text(str(ws))

    page.get_by_test_id("message-input").fill("fix add")
    page.get_by_test_id("message-send").click()

    transcript = page.get_by_test_id("transcript")
    expect(transcript.get_by_test_id("user-message")).to_have_text("fix add")
    expect(transcript.get_by_test_id("assistant-message").first).to_have_text("I will fix add.")
    tool = transcript.get_by_test_id("tool")
    expect(tool.get_by_test_id("tool-summary")).to_have_text("edit calc.py")
    card = transcript.get_by_test_id("approval-card")
    expect(card).to_contain_text("edit needs approval")
    expect(card.get_by_test_id("approval-diff")).to_contain_text("- return a - b + return a + b")
    pending = page.get_by_test_id("pending-approvals")
    expect(pending.get_by_test_id("approval-card")).to_have_count(1)
    expect(page.get_by_test_id("session-status")).to_have_text("waiting_approval")
    assert "a - b" in (ws / "calc.py").read_text()

    card.get_by_test_id("approve-once").click()

    expect(card.get_by_test_id("approval-answer")).to_have_text("Approved once")
    expect(tool.get_by_test_id("tool-summary")).to_have_text("edit calc.py → +1 -1")
    diff = tool.get_by_test_id("diff")
    expect(diff.locator(".add")).to_have_text("+    return a + b")
    expect(diff.locator(".del")).to_have_text("-    return a - b")
    expect(transcript.get_by_test_id("run-status")).to_have_text("verified")
    expect(transcript.get_by_test_id("verify-result").last).to_contain_text("passed")
    expect(pending).to_be_hidden()
    expect(page.get_by_test_id("session-status")).to_have_text("idle")
    expect(page.get_by_test_id("session-cost")).to_contain_text("tokens")  # no prices for "m"
    assert "a + b" in (ws / "calc.py").read_text()
    shown = transcript.inner_text()

    page.reload()  # the token is still in sessionStorage, the session in the fragment

    expect(transcript.get_by_test_id("run-status")).to_have_text("verified")
    assert transcript.inner_text() == shown
    expect(transcript.get_by_test_id("tool")).to_have_count(1)
    expect(transcript.get_by_test_id("approval-card")).to_have_count(1)
    expect(page.get_by_test_id("token-form")).to_be_hidden()


def test_without_a_token_the_page_asks_for_one_and_shows_the_servers_errors(
    served, page: Page, tmp_path
):
    page.goto(f"{served.url}/")
    token_input = page.get_by_test_id("token-input")
    expect(token_input).to_be_visible()
    token_input.fill("wrong")
    token_input.press("Enter")
    expect(page.get_by_test_id("error")).to_contain_text("refused the token")
    expect(token_input).to_be_visible()

    token_input.fill(served.token)
    token_input.press("Enter")
    expect(page.get_by_test_id("new-session-form")).to_be_visible()
    expect(page.get_by_test_id("error")).to_be_hidden()

    page.get_by_test_id("new-workspace").fill(str(tmp_path / "nowhere"))
    page.get_by_test_id("new-session-submit").click()
    expect(page.get_by_test_id("error")).to_contain_text("not a directory")
    expect(page.get_by_test_id("session-row")).to_have_count(0)


def _sse(*events: tuple[int, dict]) -> str:
    """An SSE body as sse-starlette writes it (CRLF), with a ping between events."""
    return "".join(
        f"id: {number}\r\ndata: {json.dumps(event)}\r\n\r\n: ping\r\n\r\n"
        for number, event in events
    )


def test_a_dropped_stream_is_resumed_with_last_event_id_and_nothing_shows_twice(
    served, page: Page, tmp_path
):
    ws = calc_workspace(tmp_path)
    with served.client() as client:
        session = client.create_session(str(ws), model="m", base_url="http://127.0.0.1:9/v1")
    started = {"type": "run_started", "task": "say hello", "model": "m", "workspace": str(ws),
               "session_id": session.id}  # fmt: skip
    finished = {"type": "run_finished", "status": "unverified", "turns": 1, "answer": "",
                "usage": {"input_tokens": 1, "output_tokens": 2, "cache_read_tokens": 0,
                          "cache_write_tokens": 0}}  # fmt: skip
    # Each body ends, as a dropped connection does; the second repeats event 3.
    bodies = [
        _sse((1, started), (2, {"type": "text_delta", "text": "Hel"}),
             (3, {"type": "text_delta", "text": "lo"})),
        _sse((3, {"type": "text_delta", "text": "lo"}),
             (4, {"type": "text_delta", "text": " there"}), (5, finished)),
    ]  # fmt: skip
    asked_after: list[str | None] = []

    def stream(route):
        asked_after.append(route.request.headers.get("last-event-id"))
        body = bodies.pop(0) if bodies else ": ping\r\n\r\n"
        route.fulfill(status=200, headers={"content-type": "text/event-stream"}, body=body)

    page.route(re.compile(r"/v1/sessions/[^/]+/events"), stream)
    page.goto(f"{served.url}/#token={served.token}&session={session.id}")

    transcript = page.get_by_test_id("transcript")
    expect(transcript.get_by_test_id("run-status")).to_have_text("unverified")
    expect(transcript.get_by_test_id("user-message")).to_have_count(1)
    expect(transcript.get_by_test_id("assistant-message")).to_have_text("Hello there")
    assert asked_after[:2] == [None, "3"]


def test_a_session_deleted_then_resumed_while_shown_is_followed_again(
    served, fake_openai, page: Page, tmp_path
):
    # The page kept the stopped stream: a click on the row did nothing (already
    # selected), and the resumed session's new run was not drawn until a reload.
    ws = calc_workspace(tmp_path)
    fake_openai.enqueue(Reply("First answer."), Reply("Second answer."))
    with served.client() as client:
        session = client.create_session(str(ws), model="m", base_url=fake_openai.base_url)
        client.send(session.id, "first")

    page.goto(f"{served.url}/#token={served.token}")
    page.get_by_test_id("session-row").first.click()
    transcript = page.get_by_test_id("transcript")
    expect(transcript.get_by_test_id("assistant-message")).to_have_text("First answer.")

    with served.client() as client:
        client.delete(session.id)
        expect(transcript).to_contain_text("no longer served")
        client.resume(session.id)
    page.get_by_test_id("message-input").fill("second")
    page.get_by_test_id("message-send").click()

    expect(transcript.get_by_test_id("assistant-message").last).to_have_text("Second answer.")


def test_a_double_click_on_send_sends_the_message_once(served, fake_openai, page: Page, tmp_path):
    # Both clicks posted it: the task ran twice, the second copy queued behind the first.
    ws = calc_workspace(tmp_path)
    fake_openai.enqueue(Reply("Done once."), Reply("Done twice."))
    with served.client() as client:
        session = client.create_session(str(ws), model="m", base_url=fake_openai.base_url)
    page.goto(f"{served.url}/#token={served.token}&session={session.id}")
    transcript = page.get_by_test_id("transcript")

    page.get_by_test_id("message-input").fill("say it")
    page.get_by_test_id("message-send").dblclick()

    expect(transcript.get_by_test_id("run-status")).to_have_count(1)
    expect(transcript.get_by_test_id("assistant-message")).to_have_text(["Done once."])
    with served.client() as client:
        assert client.session(session.id).raw["queued_messages"] == 0
    assert len(fake_openai.chat_bodies()) == 1


def test_a_long_streamed_reply_is_drawn_without_freezing_the_page(
    served, fake_openai, page: Page, tmp_path
):
    # Each event read the transcript's height after changing it, a full layout per
    # event: 4,000 lines of reply froze the tab for minutes (quadratic in the reply).
    ws = calc_workspace(tmp_path)
    text = "".join(f"line {n} of a long answer\n" for n in range(4000))
    fake_openai.enqueue(Reply(text, text_chunk=12))
    with served.client() as client:
        session = client.create_session(str(ws), model="m", base_url=fake_openai.base_url)
        client.send(session.id, "talk at length")
        list(client.events(session.id, until="run_finished"))
    page.goto(f"{served.url}/#token={served.token}&session={session.id}")

    transcript = page.get_by_test_id("transcript")
    expect(transcript.get_by_test_id("run-status")).to_have_text("unverified", timeout=60_000)
    expect(transcript.get_by_test_id("assistant-message")).to_contain_text("line 3999 of a")


def test_a_retried_reply_shows_only_the_attempt_that_counted(
    served, fake_openai, page: Page, tmp_path
):
    # The cut attempt's reasoning stayed, the new one was written after it in the same
    # bubble, and the retry note came below both.
    ws = calc_workspace(tmp_path)
    fake_openai.enqueue(
        Reply("cut text", reasoning="thinkA " * 5, cut_after=4),
        Reply("final", reasoning="thinkB"),
    )
    with served.client() as client:
        session = client.create_session(str(ws), model="m", base_url=fake_openai.base_url)
        client.send(session.id, "answer")
        list(client.events(session.id, until="run_finished"))
    page.goto(f"{served.url}/#token={served.token}&session={session.id}")

    transcript = page.get_by_test_id("transcript")
    expect(transcript.get_by_test_id("run-status")).to_have_text("unverified")
    replies = transcript.get_by_test_id("assistant-message")
    expect(replies).to_have_count(1)
    expect(replies).not_to_contain_text("thinkA")
    expect(replies).to_contain_text("thinkB")
    shown = transcript.inner_text()
    assert shown.index("retrying") < shown.index("final"), shown


def test_keyboard_focus_in_the_session_list_survives_the_refresh(
    served, fake_openai, page: Page, tmp_path
):
    # The list was rebuilt every 2 s: focus fell to the page body, and Enter opened nothing.
    ws = calc_workspace(tmp_path)
    with served.client() as client:
        session = client.create_session(str(ws), model="m", base_url=fake_openai.base_url)
    page.goto(f"{served.url}/#token={served.token}")
    button = page.get_by_test_id("session-row").get_by_role("button")
    expect(button).to_have_text(session.id)
    button.focus()
    with page.expect_request(lambda r: r.url.endswith("/v1/sessions")):
        pass  # one refresh went by
    with page.expect_request(lambda r: r.url.endswith("/v1/sessions")):
        pass
    assert page.evaluate("document.activeElement.textContent") == session.id
    page.keyboard.press("Enter")
    expect(page.get_by_test_id("session-title")).to_contain_text(session.id)


def test_a_session_named_in_the_address_is_shown_and_the_queued_note_goes_when_it_runs(
    served, fake_openai, page: Page, tmp_path
):
    # Changing `#session=` in an open tab switched nothing, and "Queued: it runs after
    # the current run." stayed after the queued message had run.
    first, second = calc_workspace(tmp_path, "one"), calc_workspace(tmp_path, "two")
    fake_openai.enqueue(Reply("a slow first answer here", trickle_s=0.3), Reply("second done"))
    with served.client() as client:
        one = client.create_session(str(first), model="m", base_url=fake_openai.base_url)
        two = client.create_session(str(second), model="m", base_url=fake_openai.base_url)
    page.goto(f"{served.url}/#token={served.token}&session={one.id}")
    expect(page.get_by_test_id("session-title")).to_contain_text(one.id)

    page.evaluate(f"location.hash = '#session={two.id}'")
    expect(page.get_by_test_id("session-title")).to_contain_text(two.id)

    page.get_by_test_id("message-input").fill("first")
    page.get_by_test_id("message-send").click()
    expect(page.get_by_test_id("transcript").get_by_test_id("user-message")).to_have_count(1)
    page.get_by_test_id("message-input").fill("then this")
    page.get_by_test_id("message-send").click()
    expect(page.get_by_test_id("message-note")).to_contain_text("Queued")
    expect(page.get_by_test_id("transcript").get_by_test_id("run-status")).to_have_count(2)
    expect(page.get_by_test_id("message-note")).to_have_text("")


def test_a_shown_session_that_stops_being_served_is_said_so_without_an_error_each_poll(
    served, fake_openai, page: Page, tmp_path
):
    # Every poll asked the deleted session for its approvals and showed the 404 as an
    # error: "... list them with GET /v1/sessions", again and again.
    ws = calc_workspace(tmp_path)
    with served.client() as client:
        session = client.create_session(str(ws), model="m", base_url=fake_openai.base_url)
    page.goto(f"{served.url}/#token={served.token}&session={session.id}")
    expect(page.get_by_test_id("session-title")).to_contain_text(session.id)
    with served.client() as client:
        client.delete(session.id)

    expect(page.get_by_test_id("session-status")).to_have_text("not served")
    for _ in range(2):  # two polls
        with page.expect_request(lambda r: r.url.endswith("/v1/sessions")):
            pass
    expect(page.get_by_test_id("error")).to_be_hidden()


def test_a_click_on_a_session_row_lands_though_the_list_refreshes_meanwhile(
    served, page: Page, tmp_path
):
    # The list was rebuilt at every refresh: one between the press and the release
    # released the pointer over a new row, and the click opened nothing.
    offline = "http://127.0.0.1:9/v1"
    with served.client() as client:
        first = client.create_session(str(calc_workspace(tmp_path, "one")), model="m",
                                      base_url=offline)  # fmt: skip
    page.goto(f"{served.url}/#token={served.token}")
    rows = page.get_by_test_id("session-row")
    expect(rows).to_have_count(1)
    box = rows.bounding_box()
    assert box is not None
    page.mouse.move(box["x"] + 5, box["y"] + box["height"] / 2)
    page.mouse.down()
    with served.client() as client:
        client.create_session(str(calc_workspace(tmp_path, "two")), model="m", base_url=offline)
    expect(rows).to_have_count(2)  # a refresh went by
    page.mouse.up()

    expect(page.get_by_test_id("session-title")).to_contain_text(first.id)


def test_a_replayed_reply_is_drawn_a_batch_of_fragments_at_a_time(served, page: Page, tmp_path):
    # Each streamed fragment was drawn on its own (a text node each, the transcript laid
    # out every frame): a reload of a 40,000-event session took 18 s to appear.
    ws = calc_workspace(tmp_path)
    with served.client() as client:
        session = client.create_session(str(ws), model="m", base_url="http://127.0.0.1:9/v1")
    started = {"type": "run_started", "task": "count", "model": "m", "workspace": str(ws),
               "session_id": session.id}  # fmt: skip
    fragments = [{"type": "text_delta", "text": f"{n} "} for n in range(3000)]
    body = _sse(*enumerate([started, *fragments], start=1))
    bodies = [body]

    def stream(route):
        route.fulfill(status=200, headers={"content-type": "text/event-stream"},
                      body=bodies.pop() if bodies else ": ping\r\n\r\n")  # fmt: skip

    page.route(re.compile(r"/v1/sessions/[^/]+/events"), stream)
    page.goto(f"{served.url}/#token={served.token}&session={session.id}")

    reply = page.get_by_test_id("assistant-message")
    expect(reply).to_have_text(" ".join(str(n) for n in range(3000)))
    pieces = reply.locator(".text").evaluate("text => text.childNodes.length")
    assert pieces < 100, pieces
