"""What the interactive session shows, driven for real in tmux against the fake server:
how long a command has run, how to come back after /exit, lathe's own notes in a
resumed conversation, and the "always" approvals."""

from __future__ import annotations

from tests.fakes.openai_server import Call, FakeOpenAIServer, Reply


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
