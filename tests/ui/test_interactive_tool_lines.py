"""What a tool call's line in the terminal shows: the call as the model wrote it, its
control bytes written out, never obeyed; how many output lines it hid; whether its
command failed. Driven for real in tmux against the fake server."""

from __future__ import annotations

import re
from pathlib import Path

from tests.fakes.openai_server import Call, FakeOpenAIServer, Reply


def test_a_commands_escape_codes_cannot_redraw_its_tool_line(
    launch, fake_openai: FakeOpenAIServer, workspace: Path
) -> None:
    # The codes erased the line and drew "● bash ls" over it: the person saw `ls` run
    # while hidden.txt was created.
    sneaky = "touch hidden.txt #\x1b[2K\x1b[1G\x1b[32m\u25cf \x1b[1mbash ls"
    fake_openai.enqueue(Reply(calls=[Call("bash", {"command": sneaky})]), Reply("Listed."))
    term = launch("--approval", "full")
    term.send("list the files")
    screen = term.wait_for(r"^Listed\.")
    assert (workspace / "hidden.txt").exists()
    assert re.search(r"bash touch hidden\.txt #\\x1b\[2K\\x1b\[1G", screen), screen


def test_a_paths_title_sequence_is_shown_not_sent_to_the_terminal(
    launch, fake_openai: FakeOpenAIServer
) -> None:
    # A read needs no approval: its path set the terminal's title through the tool line.
    path = "nofile\x1b]0;READT\x07.txt"
    fake_openai.enqueue(Reply(calls=[Call("read", {"path": path})]), Reply("Not there."))
    term = launch()
    term.send("read it")
    screen = term.wait_for(r"^Not there\.")
    title = term._tmux("display-message", "-p", "-t", term.target, "#{pane_title}")
    assert "READT" not in title
    assert r"read nofile\x1b]0;READT\x07.txt" in screen, screen


def test_a_bidi_override_in_a_tool_call_is_written_out(
    launch, fake_openai: FakeOpenAIServer
) -> None:
    # U+202E turns the rest of the line around: "rm -rf ~ #txt.elif" reads as a filename.
    command = "echo ok #\u202etxt.elif\u200b"
    fake_openai.enqueue(Reply(calls=[Call("bash", {"command": command})]), Reply("Echoed."))
    term = launch("--approval", "full")
    term.send("echo")
    screen = term.wait_for(r"^Echoed\.")
    assert r"bash echo ok #\u202etxt.elif\u200b" in screen, screen
    assert "\u202e" not in screen


def test_long_output_counts_every_line_it_hides(launch, fake_openai: FakeOpenAIServer) -> None:
    # It said "… 34 lines above": counted from the 40-line tail the tap kept.
    fake_openai.enqueue(Reply(calls=[Call("bash", {"command": "seq 1 1000"})]), Reply("Counted."))
    term = launch("--approval", "full")
    term.send("count")
    screen = term.wait_for(r"^Counted\.")
    assert "994 lines above" in screen, screen
    assert re.search(r"│ 1000$", screen, re.MULTILINE), screen


def test_a_command_that_exits_non_zero_is_not_marked_as_passed(
    launch, fake_openai: FakeOpenAIServer
) -> None:
    fake_openai.enqueue(
        Reply(calls=[Call("bash", {"command": "exit 3"})]),
        Reply(calls=[Call("bash", {"command": "true"})]),
        Reply("Done."),
    )
    term = launch("--approval", "full")
    term.send("try it")
    screen = term.wait_for(r"^Done\.")
    [failed] = re.findall(r"^.*bash exit 3 .*$", screen, re.MULTILINE)
    [passed] = re.findall(r"^.*bash true .*$", screen, re.MULTILINE)
    assert "exit 3 ✗" in failed and "✓" not in failed, failed
    assert "exit 0 ✓" in passed, passed


def test_output_cut_for_the_model_counts_the_lines_it_left_out(
    launch, fake_openai: FakeOpenAIServer
) -> None:
    # The model gets the start and the end of it; the person is told of all it wrote.
    fake_openai.enqueue(Reply(calls=[Call("bash", {"command": "seq 1 200000"})]), Reply("Counted."))
    term = launch("--approval", "full")
    term.send("count")
    screen = term.wait_for(r"^Counted\.")
    # The last five numbers and the note saying where the whole output is are shown.
    assert "199,995 lines above" in screen, screen
    assert re.search(r"│ 200000$", screen, re.MULTILINE), screen


def test_a_commands_own_bracketed_lines_are_not_taken_for_lathes_notes(
    launch, fake_openai: FakeOpenAIServer
) -> None:
    # Every trailing line starting with "[" was counted as one of the bash tool's notes:
    # "[INFO] done" lines made the count above the tail too large.
    command = "seq 1 200000; echo '[INFO] one'; echo '[INFO] two'"
    fake_openai.enqueue(Reply(calls=[Call("bash", {"command": command})]), Reply("Counted."))
    term = launch("--approval", "full")
    term.send("count")
    screen = term.wait_for(r"^Counted\.")
    assert "199,997 lines above" in screen, screen
