"""What the interactive /undo tells the model, driven for real in tmux against the fake
server: one note of lathe's, a user message as lathe's other notes are. It had put a
reply the model never wrote in the conversation ("Understood; I will re-read before
editing."), which counted as a turn, and a session left cleanly after an /undo was then
listed as unfinished."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from tests.fakes.openai_server import Call, FakeOpenAIServer, Reply

pytest.importorskip("lathe.checkpoint")

_EDIT = {"path": "app.py", "old_string": "a - b", "new_string": "a + b"}


def _edit_then_undo(launch, fake_openai: FakeOpenAIServer, *replies: Reply):
    fake_openai.enqueue(Reply(calls=[Call("edit", _EDIT)]), Reply("Edited."), *replies)
    term = launch("--approval", "full")
    term.send("fix it")
    term.wait_for(r"^Edited\.")
    term.send("/undo")
    term.wait_for(r"restored: app\.py")
    return term


def _entries(home: Path) -> list[dict]:
    [path] = (home / "sessions").glob("*/*.jsonl")
    return [json.loads(line) for line in path.read_text().splitlines()[1:] if line.strip()]


def test_undo_changes_neither_the_turns_nor_how_the_session_ended(
    launch, fake_openai: FakeOpenAIServer, workspace: Path, lathe_home: Path
) -> None:
    term = _edit_then_undo(launch, fake_openai)
    term.send("/exit")
    term.wait_exit()

    [end] = [e for e in _entries(lathe_home) if e["type"] == "run_end"]
    listed = subprocess.run(
        [sys.executable, "-m", "lathe", "sessions", "list"], cwd=workspace,
        env={**os.environ, "LATHE_HOME": str(lathe_home)},
        capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL,
    )  # fmt: skip
    assert listed.returncode == 0, listed.stderr
    _, _, status, turns, *_ = listed.stdout.splitlines()[0].split("\t")
    assert (status, turns) == (end["status"], "2")
    replies = [e["message"] for e in _entries(lathe_home) if e["type"] == "message"]
    assert [m.get("text") for m in replies if m["role"] == "assistant"] == ["", "Edited."]


def test_the_undo_note_reaches_the_model_as_lathes_with_the_next_message(
    launch, fake_openai: FakeOpenAIServer, lathe_home: Path
) -> None:
    term = _edit_then_undo(launch, fake_openai, Reply("Read it again."))
    term.send("try again")
    term.wait_for(r"^Read it again\.")

    sent = fake_openai.chat_bodies()[-1]["messages"]
    assert [m["role"] for m in sent[-3:]] == ["tool", "assistant", "user"]
    assert sent[-2]["content"] == "Edited."  # the model's own last words, nothing made up
    told = sent[-1]["content"]
    assert "undid the last change to the workspace with /undo" in told and "app.py" in told
    assert told.endswith("try again")
    messages = [e["message"] for e in _entries(lathe_home) if e["type"] == "message"]
    [note] = [m for m in messages if "with /undo" in m.get("content", "")]
    assert note["role"] == "user" and note["origin"] == "lathe"
    after = messages[messages.index(note) + 1]
    assert (after["role"], after["content"]) == ("user", "try again")


def test_a_fork_after_an_undo_is_told_of_it(launch, fake_openai: FakeOpenAIServer) -> None:
    # The note waits for the next message; the fork made before it gets its own.
    term = _edit_then_undo(launch, fake_openai, Reply("Read it again."))
    term.send("/fork")
    term.wait_for(r"continuing in the fork")
    term.send("try again")
    term.wait_for(r"^Read it again\.")

    told = fake_openai.chat_bodies()[-1]["messages"][-1]["content"]
    assert "app.py" in told and "Re-read" in told and told.endswith("try again"), told
