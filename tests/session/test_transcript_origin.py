"""Lathe's own notes in a session (the baseline check, verify feedback, a nudge) are
sent to the model as user turns, but a transcript must not show them as something the
person typed. Each transcript is made by the real CLI from a file the store wrote."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from lathe.session import RunEndEntry, SessionStore
from lathe.types import Usage, UserMessage

from .helpers import reply, user

BASELINE = "Before you started, `pytest -q` fails with exit code 1. Its output:\nE  assert 1 == 2"
FEEDBACK = "The check `pytest -q` still fails (exit 1):\nE  assert 1 == 2"


def _recorded(store: SessionStore, workspace: Path) -> str:
    with store.create(workspace, "test-model") as session:
        session.append_message(user("fix the test"))
        session.append_message(UserMessage(content=BASELINE, origin="lathe"))
        session.append_message(reply("It is fixed."))
        session.append_message(UserMessage(content=FEEDBACK, origin="lathe"))
        session.append_message(reply("Now it is."))
        session.append(RunEndEntry(status="verified", turns=2, usage=Usage()))
    return session.id


def _lathe(home: Path, *args: str) -> str:
    done = subprocess.run(
        [sys.executable, "-m", "lathe", *args], capture_output=True, text=True, timeout=60,
        env={**os.environ, "LATHE_HOME": str(home)}, stdin=subprocess.DEVNULL,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_sessions_show_marks_lathes_notes_as_its_own(
    store: SessionStore, workspace: Path, home: Path
) -> None:
    session_id = _recorded(store, workspace)
    text = _lathe(home, "sessions", "show", session_id)
    blocks = text.split("\n\n")
    users = [block for block in blocks if block.startswith("── user")]
    assert len(users) == 1 and users[0].endswith("\nfix the test")
    notes = [block for block in blocks if block.startswith("── lathe")]
    assert [note.splitlines()[1:] for note in notes] == [
        ["    " + line for line in BASELINE.splitlines()],
        ["    " + line for line in FEEDBACK.splitlines()],
    ]


def test_the_markdown_export_marks_lathes_notes_and_json_keeps_the_origin(
    store: SessionStore, workspace: Path, home: Path
) -> None:
    session_id = _recorded(store, workspace)
    markdown = _lathe(home, "sessions", "export", session_id)
    assert markdown.count("## User") == 1
    assert markdown.count("### Note from lathe") == 2
    assert f"### Note from lathe\n\n```\n{BASELINE}\n```" in markdown

    document = json.loads(_lathe(home, "sessions", "export", "--format", "json", session_id))
    origins = [
        entry["message"]["origin"]
        for entry in document["entries"]
        if entry["type"] == "message" and entry["message"]["role"] == "user"
    ]
    assert origins == ["user", "lathe", "lathe"]
