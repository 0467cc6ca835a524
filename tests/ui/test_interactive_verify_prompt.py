"""`/verify` changes what the model is told, not only what lathe runs: the system prompt
names the check the session has now, driven for real in tmux against the fake server."""

from __future__ import annotations

from pathlib import Path

from tests.fakes.openai_server import Call, FakeOpenAIServer, Reply


def _system_text(body: dict) -> str:
    return str(body["messages"][0]["content"])


def test_a_verify_command_set_in_the_session_is_named_in_the_prompt(
    launch, fake_openai: FakeOpenAIServer
) -> None:
    # The prompt was built once at start-up: a check set with /verify ran at the end,
    # but the model was never told, so it finished without running it first.
    fake_openai.enqueue(Reply("Hello."))
    term = launch("--approval", "full")
    term.send("/verify touch VERIFY_RAN")
    term.wait_for(r"verify: touch VERIFY_RAN \(checked")
    term.send("hello")
    term.wait_for(r"^(verified|unverified|failed) · ")
    assert "`touch VERIFY_RAN`" in _system_text(fake_openai.chat_bodies()[-1])


def test_a_verify_turned_off_in_the_session_leaves_the_prompt(
    launch, fake_openai: FakeOpenAIServer
) -> None:
    fake_openai.enqueue(Reply("Hello."))
    term = launch("--approval", "full", "--verify", "touch V2")
    term.wait_for(r"verify on\s*\Z")
    term.send("/verify off")
    term.wait_for(r"verify: off")
    term.send("hello")
    term.wait_for(r"^unverified · 1 turn")
    assert "touch V2" not in _system_text(fake_openai.chat_bodies()[-1])


def test_a_verify_command_set_mid_turn_is_named_from_the_next_message(
    launch, fake_openai: FakeOpenAIServer, workspace: Path
) -> None:
    # A run's checks are set as it starts: the turn running ends as it began (it had
    # said "checked after the model says it is done", and no check ran), and the next
    # message has the check, in its prompt too.
    slow = Call("bash", {"command": "sleep 4"})
    fake_openai.enqueue(Reply(calls=[slow]), Reply("One two three."), Reply("Again."))
    term = launch("--approval", "full")
    term.send("hello")
    term.wait_for(r"sleep 4")
    term.send("/verify touch MID")
    term.wait_for(r"verify: touch MID \(from the next message")
    term.wait_for(r"^unverified · 2 turns")
    assert not (workspace / "MID").exists()
    term.send("again")
    term.wait_for(r"^verified · ")
    assert (workspace / "MID").exists()
    first, second = fake_openai.chat_bodies()[-2:]
    assert "touch MID" not in _system_text(first)
    assert "`touch MID`" in _system_text(second)
