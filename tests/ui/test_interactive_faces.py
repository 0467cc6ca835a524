"""What the interactive session shows, driven for real in tmux against the fake server:
how long a command has run, how to come back after /exit, lathe's own notes in a
resumed conversation, and the "always" approvals."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from tests.fakes.openai_server import Call, FakeOpenAIServer, Hang, Reply


@pytest.mark.waits
def test_the_status_line_shows_how_long_the_running_command_has_run(
    launch, fake_openai: FakeOpenAIServer
) -> None:
    fake_openai.enqueue(
        Reply("", calls=[Call("bash", {"command": "sleep 2"})]),
        Reply("", calls=[Call("bash", {"command": "sleep 4"})]),
        Reply("Both done."),
    )
    term = launch("--approval", "full")
    term.send("wait twice")
    term.wait_for(r"bash sleep 2 .* exit 0")
    # the command's own time, with the turn's beside it
    term.wait_for(r"bash sleep 4 · [1-3]s \(turn [3-9]s\)")
    term.wait_for(r"Both done\.", timeout=20)


@pytest.mark.waits
def test_an_approved_command_keeps_its_name_in_the_status_line(
    launch, fake_openai: FakeOpenAIServer
) -> None:
    fake_openai.enqueue(
        Reply("", calls=[Call("bash", {"command": "sleep 4"})]),
        Reply("Done."),
    )
    term = launch()
    term.send("wait")
    term.wait_for(r"approve: run command")
    term.send("y")
    term.wait_for(r"bash sleep 4 · [1-3]s")
    term.wait_for(r"Done\.", timeout=20)


def _session_ids(home: Path) -> list[str]:
    return [
        json.loads(path.read_text().splitlines()[0])["id"]
        for path in sorted((home / "sessions").glob("*/*.jsonl"))
    ]


def test_exit_names_the_session_and_how_to_resume_it(
    launch, fake_openai: FakeOpenAIServer, lathe_home: Path
) -> None:
    fake_openai.enqueue(Reply("Hello there."), Reply("Welcome back."))
    term = launch()
    term.send("hi")
    term.wait_for(r"Hello there\.")
    term.send("/exit")
    term.wait_exit()
    (session_id,) = _session_ids(lathe_home)
    assert f"session {session_id} · continue it with: lathe --resume {session_id}" in term.screen()

    again = launch("--resume", session_id)
    again.wait_for(r"ctx \d+% of")  # the prompt is up (a replayed "> hi" is not it)
    again.send("back")
    again.wait_for(r"Welcome back\.")
    assert _session_ids(lathe_home) == [session_id]


def test_leaving_a_session_with_nothing_in_it_names_no_session(launch, lathe_home: Path) -> None:
    term = launch()
    term.send("/exit")
    term.wait_exit()
    assert "--resume" not in term.screen()
    assert not list((lathe_home / "sessions").glob("*/*.jsonl"))


def test_a_resumed_session_shows_lathes_notes_as_lathes_not_as_typed(
    launch, fake_openai: FakeOpenAIServer, workspace: Path, lathe_home: Path
) -> None:
    from lathe.session import SessionStore
    from lathe.types import AssistantMessage, UserMessage

    note = "Before you started, `pytest -q` fails with exit code 1."
    with SessionStore(lathe_home).create(workspace, "fake-model") as session:
        session.append_message(UserMessage(content="fix the test"))
        session.append_message(UserMessage(content=note, origin="lathe"))
        session.append_message(AssistantMessage(text="It is fixed now."))
    term = launch("--resume", session.id)
    screen = term.wait_for(r"── now ──")
    replay = screen[screen.index("earlier in this session") :]
    assert "> fix the test" in replay
    assert f"lathe: {note}" in replay
    assert f"> {note}" not in replay


def test_always_approvals_are_listed_with_their_scope_and_can_be_revoked(
    launch, fake_openai: FakeOpenAIServer, lathe_home: Path
) -> None:
    command = "echo hello"
    fake_openai.enqueue(
        Reply("", calls=[Call("bash", {"command": command})]),
        Reply("Ran it."),
        Reply("", calls=[Call("bash", {"command": command})]),
        Reply("Ran it again."),
    )
    term = launch()
    term.send("say hello")
    term.wait_for(r"approve: run command")
    term.send("a")
    term.wait_for(r"Ran it\.")
    term.send("/approval")
    screen = term.wait_for(r"/approval revoke N")
    assert "allowed always, in this session (kept on --resume and /fork):" in screen
    assert f"  1  bash({command})" in screen

    term.send("/approval revoke 2")
    term.wait_for(r"no always-allowed call '2'; /approval lists them \(1 to 1\)")
    term.send("/approval revoke 1")
    term.wait_for(rf"revoked: bash\({command}\); it asks again")
    term.send("/approval")
    term.wait_for(r"revoked: [\s\S]*no call is allowed always")
    term.send("again")
    term.wait_for(r"revoked: [\s\S]*approve: run command")
    term.send("n")
    term.wait_for(r"Ran it again\.")
    term.send("/exit")
    term.wait_exit()

    (session_id,) = _session_ids(lathe_home)
    resumed = launch("--resume", session_id)
    resumed.wait_for(r"ctx \d+% of")
    resumed.send("/approval")
    resumed.wait_for(r"no call is allowed always")


def test_resume_of_a_session_of_another_workspace_names_its_own(
    launch, fake_openai: FakeOpenAIServer, lathe_home: Path, tmp_path: Path
) -> None:
    import os
    import subprocess
    import sys

    other = tmp_path / "other"
    other.mkdir()
    fake_openai.enqueue(Reply("Elsewhere."))
    env = {**os.environ, "LATHE_HOME": str(lathe_home), "OPENAI_API_KEY": "test-key"}
    made = subprocess.run(
        [sys.executable, "-m", "lathe", "run", "--json", "--model", "fake-model", "--base-url",
         fake_openai.base_url, "-C", str(other), "hello"],
        env=env, capture_output=True, text=True, timeout=120, stdin=subprocess.DEVNULL,
    )  # fmt: skip
    assert made.returncode == 0, made.stderr
    other_id = _session_ids(lathe_home)[0]

    term = launch()
    term.send(f"/resume {other_id}")

    term.wait_for(rf"session {other_id} belongs to")
    screen = " ".join(term.wait_for(r"\(-C ").split())  # the note wraps at the width
    assert f"belongs to {other}, not " in screen and f"(-C {other})" in screen
    assert "Elsewhere." not in screen  # its conversation was not adopted


def test_resume_of_the_session_in_use_says_so(
    launch, fake_openai: FakeOpenAIServer, lathe_home: Path
) -> None:
    fake_openai.enqueue(Reply("Hi."))
    term = launch()
    term.send("hello")
    term.wait_for(r"^Hi\.")
    (session_id,) = _session_ids(lathe_home)
    term.send(f"/resume {session_id[:6]}")
    screen = term.wait_for(rf"you are in session {session_id} already")
    assert "another lathe process" not in screen


def test_compact_of_a_short_conversation_spends_no_request_and_says_one_thing(
    launch, fake_openai: FakeOpenAIServer
) -> None:
    fake_openai.enqueue(Reply("Hi."), Reply("Still here."), Reply("Again."))
    term = launch()
    for text, answer in (("hello", r"^Hi\."), ("more", r"^Still here\."), ("again", r"^Again\.")):
        term.send(text)
        term.wait_for(answer)
    term.send("/compact")
    screen = term.wait_for(r"nothing to compact yet")
    assert "did not shrink" not in screen
    assert len(fake_openai.chat_bodies()) == 3  # no summary was asked for


def test_esc_stops_a_compaction_that_hangs_and_the_session_goes_on(
    launch, fake_openai: FakeOpenAIServer
) -> None:
    # /compact was awaited inside the input loop: no prompt, no Esc, for minutes, and
    # Ctrl-C ended lathe.
    long = "word " * 600
    fake_openai.enqueue(Reply(f"One {long}"), Reply(f"Two {long}"), Reply(f"Three {long}"))
    term = launch()
    for text, answer in (("first", r"unverified · 1 turn"), ("second", r"(?s)turn.*turn"),
                         ("third", r"(?s)turn.*turn.*turn")):  # fmt: skip
        term.send(text)
        term.wait_for(answer)
    fake_openai.enqueue(Hang(60), Reply("After."))
    term.send("/compact")
    term.wait_for(r"compacting")
    term.keys("Escape")
    term.wait_for(r"compacting stopped: nothing changed")
    term.send("go on")
    term.wait_for(r"^After\.")
    last = fake_openai.chat_bodies()[-1]
    users = [m["content"] for m in last["messages"] if m["role"] == "user"]
    assert users == ["first", "second", "third", "go on"]


def test_undo_leaves_a_turn_of_another_open_session_alone(
    launch, fake_openai: FakeOpenAIServer, workspace: Path
) -> None:
    # It reverted the other session's file and told this conversation, not that one.
    fake_openai.enqueue(
        Reply(calls=[Call("write", {"path": "fromA.txt", "content": "A\n"})]), Reply("Made.")
    )
    first = launch("--approval", "auto")
    first.send("make a file")
    first.wait_for(r"^Made\.")
    second = launch()
    second.send("/undo")
    second.wait_for(r"the last change here is a turn of session")
    assert (workspace / "fromA.txt").exists()

    first.send("/exit")
    first.wait_exit()
    second.send("/undo")  # a finished session's turn may be undone from here
    second.wait_for(r"deleted: fromA\.txt")
    assert not (workspace / "fromA.txt").exists()
