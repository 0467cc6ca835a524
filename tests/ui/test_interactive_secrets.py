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
