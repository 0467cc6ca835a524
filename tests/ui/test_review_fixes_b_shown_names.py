"""A file's name shown to a person is written one way (`visible_name`), wherever lathe
shows it: `lathe undo`'s report and its errors, and the app's /undo.

Reproduced on main: the report wrote `a\\x0ab.txt` for a name holding a newline, but an
error naming the same file (`visible_text`, which keeps newlines) split its line there,
and the app's /undo printed the name raw, on two lines.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from tests.checkpoint.helpers import lathe
from tests.checkpoint.test_checkpoint_unwritable import unwritable_folder
from tests.fakes.openai_server import Call, FakeOpenAIServer, Reply

from lathe.exec.terminal import visible_name

pytest.importorskip("lathe.checkpoint")

from lathe.checkpoint import Checkpoints


def test_visible_name_writes_out_every_character_that_is_not_printable() -> None:
    name = "a\nb\tc\x1b]52;c;eA==\x07\x9b\u202etxt.exe\u200b\udcff é.txt"

    assert visible_name(name) == (
        "a\\x0ab\\x09c\\x1b]52;c;eA==\\x07\\x9b\\u202etxt.exe\\u200b\\xff é.txt"
    )
    assert visible_name("src/app.py") == "src/app.py"


def test_an_undo_refused_names_a_file_holding_a_newline_on_its_own_line(
    tmp_path: Path,
) -> None:
    ws = tmp_path / "ws"
    folder = ws / "two\nlines"
    folder.mkdir(parents=True)
    (folder / "f.txt").write_text("before\n")
    checkpoints = Checkpoints(ws, tmp_path / "home")
    checkpoints.before_turn(1)
    (folder / "f.txt").write_text("after\n")
    checkpoints.after_turn(1)

    with unwritable_folder(folder):
        refused = lathe(tmp_path, "undo", "-C", str(ws))

    assert refused.returncode == 2, refused.stderr
    assert "  two\\x0alines/f.txt: folder two\\x0alines/ " in refused.stderr, refused.stderr
    assert not any(line.startswith("lines") for line in refused.stderr.splitlines())


def test_lathe_undo_reports_such_a_name_as_its_errors_do(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    checkpoints = Checkpoints(ws, tmp_path / "home")
    checkpoints.before_turn(1)
    (ws / "two\nlines.txt").write_text("new\n")
    checkpoints.after_turn(1)

    undone = lathe(tmp_path, "undo", "-C", str(ws))

    assert undone.returncode == 0, undone.stderr
    assert "  deleted    two\\x0alines.txt\n" in undone.stdout


def test_the_app_undo_lists_such_a_name_on_one_line(
    launch, fake_openai: FakeOpenAIServer, workspace: Path
) -> None:
    write = Call("write", {"path": "two\nlines.txt", "content": "x\n"})
    fake_openai.enqueue(Reply(calls=[write]), Reply("Written."))
    term = launch("--approval", "full")
    term.send("write it")
    term.wait_for(r"^Written\.")
    assert (workspace / "two\nlines.txt").exists()

    term.send("/undo")
    screen = term.wait_for(r"deleted: two\\x0alines\.txt")

    assert not (workspace / "two\nlines.txt").exists()
    assert not any(line.startswith("lines.txt") for line in screen.splitlines()), screen
