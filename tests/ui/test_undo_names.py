"""Which message's turn an undo names, in the app's /undo and in `lathe undo`: each
message of a conversation is a run whose turns count from 1, and the quote had been
the session's title, its first message, whichever message's turn was undone."""

from __future__ import annotations

import re
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


def test_the_app_undo_names_a_file_whose_bits_alone_it_set_back(
    launch, fake_openai: FakeOpenAIServer, workspace: Path
) -> None:
    # `lathe undo` printed "mode restored secret.env"; the app said "undone: ..." and
    # named no file, and the model was not told.
    secret = workspace / "secret.env"
    secret.write_text("K=1\n")
    secret.chmod(0o600)
    fake_openai.enqueue(Reply(calls=[Call("bash", {"command": "chmod 666 secret.env"})]),
                        Reply("Opened it up."))  # fmt: skip
    term = launch("--approval", "full")
    term.send("make the secret readable")
    term.wait_for(r"^Opened it up\.")
    assert secret.stat().st_mode & 0o777 == 0o666
    term.send("/undo")
    term.wait_for(r"mode restored: secret\.env")
    assert secret.stat().st_mode & 0o777 == 0o600


def test_the_app_undo_names_the_restore_of_a_file_the_turn_ignored(
    launch, fake_openai: FakeOpenAIServer, workspace: Path
) -> None:
    # `lathe undo` names the restore that brings such a file back; the app said nothing.
    (workspace / "config.json").write_text("prod-original\n")
    (workspace / ".gitignore").write_text("*.log\n")
    ignore = Call("edit", {"path": ".gitignore", "old_string": "*.log",
                           "new_string": "*.log\nconfig.json"})  # fmt: skip
    change = Call("write", {"path": "config.json", "content": "CHANGED\n"})
    fake_openai.enqueue(
        Reply(calls=[Call("read", {"path": "config.json"})]),
        Reply(calls=[ignore, change]),
        Reply("Done."),
    )
    term = launch("--approval", "full")
    term.send("hide the config")
    term.wait_for(r"^Done\.")
    term.send("/undo")
    screen = term.wait_for(r"not overwritten .*config\.json")
    assert re.search(r"lathe\s+checkpoints\s+restore\s+\d", screen), screen
    assert (workspace / "config.json").read_text() == "CHANGED\n"
