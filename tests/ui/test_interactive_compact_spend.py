"""A `/compact` outside a run is spend of the session, driven for real in tmux against the
fake server: its summary request is reported and counted in `/cost`, whether it comes
before the first run of a resumed session or between runs."""

from __future__ import annotations

from tests.fakes.openai_server import FakeOpenAIServer, Reply
from tests.ui.test_interactive_spend import _flat, _usage


def test_compact_first_thing_in_a_resumed_session_is_counted(
    launch, fake_openai: FakeOpenAIServer
) -> None:
    # /compact right after --continue sent its summary request unreported: /cost said
    # "tokens: 0 in · 0 out" (no run had set the context manager's counter).
    long = "word " * 600
    fake_openai.enqueue(
        *(Reply(f"{n} {long}", usage=_usage(100, 10)) for n in ("One", "Two", "Three"))
    )
    first = launch()
    for text, answer in (("first", r"unverified · 1 turn"), ("second", r"(?s)turn.*turn"),
                         ("third", r"(?s)turn.*turn.*turn")):  # fmt: skip
        first.send(text)
        first.wait_for(answer)
    first.keys("C-d")
    first.wait_exit()

    fake_openai.enqueue(Reply("SUMMARY of it all.", usage=_usage(7_000, 300)))
    term = launch("--continue")
    term.wait_for(r"ctx \d+% of")
    term.send("/compact")
    term.wait_for(r"context compacted \(user\)")
    term.send("/cost")
    screen = _flat(term.wait_for(r"this session so far"))
    assert "tokens: 7,000 in · 300 out" in screen, screen


def test_compact_between_runs_is_counted_once(launch, fake_openai: FakeOpenAIServer) -> None:
    long = "word " * 600
    fake_openai.enqueue(
        *(Reply(f"{n} {long}", usage=_usage(100, 10)) for n in ("One", "Two", "Three"))
    )
    term = launch()
    for text, answer in (("first", r"unverified · 1 turn"), ("second", r"(?s)turn.*turn"),
                         ("third", r"(?s)turn.*turn.*turn")):  # fmt: skip
        term.send(text)
        term.wait_for(answer)
    fake_openai.enqueue(Reply("SUMMARY of it all.", usage=_usage(7_000, 300)))
    term.send("/model other-model")  # a new agent, whose manager no run has set yet
    term.wait_for(r"model: fake-model → other-model")
    term.send("/compact")
    term.wait_for(r"context compacted \(user\)")
    term.send("/cost")
    screen = _flat(term.wait_for(r"this session so far"))
    assert "tokens: 7,300 in · 330 out" in screen, screen
