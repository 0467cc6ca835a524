"""A slash command given words it does not take refuses them in one line and does
nothing, driven for real in tmux against the fake server: `/undo 5` had reverted the
newest turn (not "checkpoint 5") and `/clear now` had cleared without a word."""

from __future__ import annotations

from pathlib import Path

from tests.fakes.openai_server import Call, FakeOpenAIServer, Reply


def test_a_command_refuses_words_it_does_not_take(
    launch, fake_openai: FakeOpenAIServer, workspace: Path
) -> None:
    fake_openai.enqueue(
        Reply(calls=[Call("write", {"path": "out5.txt", "content": "five\n"})]),
        Reply("Wrote it."),
    )
    term = launch("--approval", "auto")
    term.send("write out5.txt")
    term.wait_for(r"Wrote it\.")
    assert (workspace / "out5.txt").exists()

    for line in [
        "/undo 5",
        "/clear now",
        "/fork mine",
        "/compact the tests",
        "/exit now",
        "/cost all",
        "/checkpoints 3",
        "/sessions all",
        "/memory x",
        "/help undo",
    ]:
        name, _, words = line.partition(" ")
        term.send(line)
        term.wait_for(rf"^{name} takes no arguments, not '{words}'")

    screen = term.screen()
    assert (workspace / "out5.txt").exists()  # /undo 5 undid nothing
    assert "new conversation" not in screen  # /clear now did not clear
    assert "forked session" not in screen
    assert not term.dead()  # /exit now did not leave
    # Each refusal names what the command does without them.
    assert "/undo alone reverts the newest agent turn" in " ".join(screen.split())

    term.send("/undo")  # alone, it does what it says
    term.wait_for(r"undone:")
    assert not (workspace / "out5.txt").exists()
