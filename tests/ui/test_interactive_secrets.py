"""A key the model repeats never shows whole in the interactive session, driven for real
in tmux against the fake server: its reply arrives in deltas of a few characters, each
of which had been masked on its own."""

from __future__ import annotations

from tests.fakes.openai_server import FakeOpenAIServer, Reply

KEY = "sk-interactive-0123456789abcdef0123"


def test_a_key_streamed_in_pieces_shows_masked(launch, fake_openai: FakeOpenAIServer) -> None:
    fake_openai.enqueue(Reply(f"the header was Bearer {KEY} and that is all", text_chunk=4))
    term = launch(env={"OPENAI_API_KEY": KEY})
    term.send("say the header")
    screen = term.wait_for(r"that is all")
    term.wait_for(r"1 turn")
    screen = term.screen()
    assert KEY not in screen and KEY[:20] not in screen, screen
    assert "sk-…0123" in screen, screen


def test_text_held_back_when_a_reply_is_interrupted_stays_with_that_reply(
    launch, fake_openai: FakeOpenAIServer
) -> None:
    # A reply cut after "four s" ("s" may begin the key) kept the "s" held back; it came
    # out at the start of the next reply: "sZebra reply."
    fake_openai.enqueue(
        Reply("one two three four s more text after", text_chunk=5, stall_after=5, stall_s=60),
        Reply("Zebra reply."),
    )
    term = launch(env={"OPENAI_API_KEY": KEY})
    term.send("first")
    term.wait_for(r"three four")
    term.keys("Escape")
    term.wait_for(r"interrupted")
    term.send("second")
    screen = term.wait_for(r"Zebra reply\.")
    assert "sZebra" not in screen, screen
    sent = fake_openai.chat_bodies()[-1]["messages"]
    partial = next(m["content"] for m in sent if m["role"] == "assistant")
    assert "three four s" in partial, partial
