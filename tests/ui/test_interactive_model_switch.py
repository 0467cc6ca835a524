"""What a `/model` switch keeps, driven for real in tmux against the fake server: the
session's own settings (`/verify`, `/approval`) and when the new model takes over."""

from __future__ import annotations

from pathlib import Path

from tests.fakes.openai_server import Call, FakeOpenAIServer, Reply


def _footer(term, ending: str) -> None:
    """Wait until the footer (the screen's last line) ends with `ending` (a regex)."""
    term.wait_for(rf"{ending}\s*\Z")


def test_a_verify_command_set_in_the_session_outlives_a_model_switch(
    launch, fake_openai: FakeOpenAIServer, workspace: Path
) -> None:
    # The agent rebuilt for the new model read the start-up verify (none): the run ended
    # unverified, the command never ran, while the footer still said "verify on".
    write = Call("write", {"path": "new.py", "content": "x = 1\n"})
    fake_openai.enqueue(Reply(calls=[write]), Reply("Done."))
    term = launch("--approval", "full")
    term.send("/verify touch VERIFY_RAN")
    term.wait_for(r"verify: touch VERIFY_RAN \(checked")
    term.send("/model other-model")
    term.wait_for(r"model: fake-model → other-model")
    term.send("add new.py")
    screen = term.wait_for(r"^(verified|unverified|failed) · ")
    assert "verify passed: touch VERIFY_RAN" in screen, screen
    assert (workspace / "VERIFY_RAN").exists()
    assert fake_openai.chat_bodies()[-1]["model"] == "other-model"
    term.send("/verify")
    term.wait_for(r"^verify: touch VERIFY_RAN$")
    _footer(term, r"· full · verify on")


def test_a_verify_turned_off_in_the_session_stays_off_after_a_model_switch(
    launch, fake_openai: FakeOpenAIServer, workspace: Path
) -> None:
    fake_openai.enqueue(Reply("Hello."))
    term = launch("--approval", "full", "--verify", "touch V2")
    _footer(term, r"· full · verify on")
    term.send("/verify off")
    term.wait_for(r"verify: off")
    term.send("/model other-model")
    term.wait_for(r"model: fake-model → other-model")
    term.send("/verify")
    term.wait_for(r"^verify: none")
    _footer(term, r"· full")
    term.send("hello")
    screen = term.wait_for(r"^unverified · 1 turn")
    assert "touch V2" not in screen.split("/verify off")[-1].split("> hello")[-1]
    assert not (workspace / "V2").exists()


def test_the_approval_mode_set_in_the_session_outlives_a_model_switch(
    launch, fake_openai: FakeOpenAIServer, workspace: Path
) -> None:
    write = Call("write", {"path": "new.py", "content": "x = 1\n"})
    fake_openai.enqueue(Reply(calls=[write]), Reply("Done."))
    term = launch("--approval", "full")
    term.send("/approval read-only")
    term.wait_for(r"approval: read-only \(")
    term.send("/model other-model")
    term.wait_for(r"model: fake-model → other-model")
    term.send("/approval")
    term.wait_for(r"^approval: read-only  \(modes")
    term.send("add new.py")
    term.wait_for(r"^Done\.")
    assert not (workspace / "new.py").exists()


def test_a_model_named_during_compact_answers_the_next_message(
    launch, fake_openai: FakeOpenAIServer
) -> None:
    # "/model" during /compact said "from the next message", but only a turn's end
    # applied it: the next message still went to the old model.
    long = "word " * 600
    fake_openai.enqueue(Reply(f"One {long}"), Reply(f"Two {long}"), Reply(f"Three {long}"))
    term = launch()
    for text, answer in (("first", r"unverified · 1 turn"), ("second", r"(?s)turn.*turn"),
                         ("third", r"(?s)turn.*turn.*turn")):  # fmt: skip
        term.send(text)
        term.wait_for(answer)
    fake_openai.enqueue(Reply("SUMMARY of it all.", stall_after=1, stall_s=4), Reply("After."))
    term.send("/compact")
    term.wait_for(r"compacting")
    term.send("/model other-model")
    term.wait_for(r"model: fake-model → other-model \(from the next message")
    term.wait_for(r"context compacted \(user\)")
    term.send("go on")
    term.wait_for(r"^After\.")
    assert [b["model"] for b in fake_openai.chat_bodies()][-2:] == ["fake-model", "other-model"]


def test_what_the_model_read_before_a_switch_counts_after_it(
    launch, fake_openai: FakeOpenAIServer, workspace: Path
) -> None:
    # The agent rebuilt for the new model started with no file seen: a whole-file write
    # of a file read just before was refused as never read.
    rewrite = Call("write", {"path": "app.py", "content": "def add(a, b):\n    return a + b\n"})
    fake_openai.enqueue(
        Reply(calls=[Call("read", {"path": "app.py"})]), Reply("Read it."),
        Reply(calls=[rewrite]), Reply("Rewritten."),
    )  # fmt: skip
    term = launch("--approval", "full")
    term.send("read app.py")
    term.wait_for(r"^Read it\.")
    term.send("/model other-model")
    term.wait_for(r"model: fake-model → other-model")
    term.send("now rewrite it")
    term.wait_for(r"^Rewritten\.")
    assert (workspace / "app.py").read_text().endswith("a + b\n")
