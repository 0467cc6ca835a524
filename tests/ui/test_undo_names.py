"""Which message's turn an undo names, in the app's /undo and in `lathe undo`: each
message of a conversation is a run whose turns count from 1, and the quote had been
the session's title, its first message, whichever message's turn was undone."""

from __future__ import annotations

from pathlib import Path

import pytest
from tests.checkpoint.helpers import lathe, run
from tests.fakes.openai_server import Call, FakeOpenAIServer, Reply

pytest.importorskip("lathe.checkpoint")


def test_the_app_undo_quotes_the_message_whose_turn_it_reverted(
    launch, fake_openai: FakeOpenAIServer, workspace: Path
) -> None:
    write = Call("write", {"path": "new.py", "content": "x = 1\n"})
    fake_openai.enqueue(Reply("It is small."), Reply(calls=[write]), Reply("Added."))
    term = launch("--approval", "full")
    term.send("please explain the project")
    term.wait_for(r"^It is small\.")
    term.send("add new.py")
    term.wait_for(r"^Added\.")
    term.send("/undo")
    screen = term.wait_for(r"deleted: new\.py")
    assert not (workspace / "new.py").exists()
    [line] = [line for line in screen.splitlines() if line.startswith("undone: ")]
    assert line.startswith("undone: turn 1 of session "), screen
    assert '("add new.py", recorded ' in line, screen
    assert "please explain" not in line, screen


def test_lathe_undo_quotes_the_run_of_a_continued_session_it_reverts(
    tmp_path: Path, fake_openai: FakeOpenAIServer
) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "app.py").write_text("v0\n")
    fake_openai.enqueue(Reply("Nothing to change."))
    assert run(fake_openai, ws, tmp_path, "look around").returncode == 0
    edit = Call("edit", {"path": "app.py", "old_string": "v0", "new_string": "v1"})
    fake_openai.enqueue(Reply(calls=[edit]), Reply("Done."))
    assert run(fake_openai, ws, tmp_path, "--continue", "bump the version").returncode == 0

    undone = lathe(tmp_path, "undo", "-C", str(ws))

    assert undone.returncode == 0, undone.stderr
    assert (ws / "app.py").read_text() == "v0\n"
    headline = undone.stdout.splitlines()[0]
    assert headline.startswith("Undo of turn 1 of session "), undone.stdout
    assert '("bump the version", recorded ' in headline, undone.stdout
