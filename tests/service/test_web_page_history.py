"""The web page's earlier history: a session's journal begins when it is first served,
so the conversation before it — a fork's parent's, or a `lathe run` served later — comes
from the session's transcript, drawn above the journal's events."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys

from playwright.sync_api import Page, expect
from tests.browser import needs_chromium
from tests.fakes.openai_server import Call, Reply
from tests.service.scripts import calc_workspace

pytestmark = needs_chromium


def test_a_fork_shows_the_conversation_it_was_forked_with_then_its_own_runs(
    served, fake_openai, page: Page, tmp_path
):
    # A fork starts a new, empty journal: its transcript was blank on the page.
    ws = calc_workspace(tmp_path)
    read = Call("read", {"path": "calc.py"})
    fake_openai.enqueue(Reply("first answer", calls=[read]), Reply("read it"), Reply("fork answer"))
    with served.client() as client:
        session = client.create_session(str(ws), model="m", base_url=fake_openai.base_url)
        client.send(session.id, "hello")
        list(client.events(session.id, until="run_finished"))
        fork = client.fork(session.id)
    page.goto(f"{served.url}/#token={served.token}&session={fork.id}")

    history = page.get_by_test_id("earlier-history")
    expect(history.get_by_test_id("user-message")).to_have_text(["hello"])
    expect(history.get_by_test_id("assistant-message")).to_have_text(
        [re.compile(r"^first answer\s+→ read\(calc.py\)$"), "read it"]
    )
    expect(history.get_by_test_id("tool-result")).to_contain_text("return a - b")
    expect(history).to_contain_text("run ended unverified")

    page.get_by_test_id("message-input").fill("and now")
    page.get_by_test_id("message-send").click()
    transcript = page.get_by_test_id("transcript")
    expect(transcript.get_by_test_id("run-status")).to_have_text("unverified")
    expect(transcript.get_by_test_id("user-message")).to_have_text(["hello", "and now"])
    shown = transcript.inner_text()

    page.reload()  # the fork's own run is in its journal, not drawn again as history

    expect(transcript.get_by_test_id("run-status")).to_have_text("unverified")
    expect(transcript.get_by_test_id("user-message")).to_have_text(["hello", "and now"])
    expect(history.get_by_test_id("assistant-message")).to_have_count(2)
    assert transcript.inner_text() == shown


def test_a_session_lathe_run_made_shows_its_conversation_once_served(
    served, fake_openai, page: Page, tmp_path
):
    # `lathe run` writes no journal: resumed on the service, the page showed nothing.
    ws = calc_workspace(tmp_path)
    fake_openai.enqueue(Reply("CLI answer"))
    env = {k: v for k, v in os.environ.items() if not k.startswith(("LATHE_", "OPENAI_"))}
    env.update(LATHE_HOME=str(served.home), OPENAI_API_KEY="sk-test")
    ran = subprocess.run(
        [sys.executable, "-m", "lathe", "run", "-C", str(ws), "--model", "m", "--base-url",
         fake_openai.base_url, "--json", "look at calc"],
        env=env, capture_output=True, text=True, timeout=120, stdin=subprocess.DEVNULL,
    )  # fmt: skip
    assert ran.returncode == 0, ran.stderr
    session_id = json.loads(ran.stdout.splitlines()[0])["session_id"]
    with served.client() as client:
        client.resume(session_id, base_url=fake_openai.base_url)
    page.goto(f"{served.url}/#token={served.token}&session={session_id}")

    history = page.get_by_test_id("earlier-history")
    expect(history.get_by_test_id("user-message")).to_have_text(["look at calc"])
    expect(history.get_by_test_id("assistant-message")).to_have_text(["CLI answer"])
    expect(page.get_by_test_id("transcript").get_by_test_id("run-status")).to_have_count(0)


def test_earlier_history_keeps_messages_whose_lines_look_like_the_transcripts_own(
    served, fake_openai, page: Page, tmp_path
):
    # The page read the transcript's text: a line of a message shaped like one of its
    # headers ("── user (…)", "[label: …]") split the message there.
    ws = calc_workspace(tmp_path)
    asked = "look at calc\n[label: not a label]\nand say"
    answered = "Here:\n── user (abc123)\nwas quoted"
    fake_openai.enqueue(Reply(answered))
    with served.client() as client:
        session = client.create_session(str(ws), model="m", base_url=fake_openai.base_url)
        client.send(session.id, asked)
        list(client.events(session.id, until="run_finished"))
        fork = client.fork(session.id)
    page.goto(f"{served.url}/#token={served.token}&session={fork.id}")

    history = page.get_by_test_id("earlier-history")
    expect(history.get_by_test_id("user-message")).to_have_text([asked])
    expect(history.get_by_test_id("assistant-message")).to_have_text([answered])
    expect(history.locator("p.note")).to_have_text(
        ["Earlier in this session, from its record:", re.compile(r"^\[run ended unverified")]
    )
