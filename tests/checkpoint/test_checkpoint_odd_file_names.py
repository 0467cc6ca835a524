"""File names holding bytes the checkpoint store and its commands must not trip on,
through the real CLI against the fake server:

- a name holding 0x1E broke the store for good: `ShadowRepo.log` split git's output on
  that byte, so the run died with a traceback, and `lathe undo` and `lathe checkpoints
  list` with it, for as long as the commit stayed in the history;
- `lathe undo` printed names raw: a file named with an OSC 52 sequence wrote the
  clipboard of the terminal that ran it.
"""

from __future__ import annotations

import pytest
from tests.checkpoint.helpers import bash, lathe, run
from tests.fakes.openai_server import Call, Reply

from lathe.checkpoint import Checkpoints
from lathe.checkpoint.shadow import ShadowRepo
from lathe.errors import LatheError

ODD = "odd\x1ename\x1f.txt"


def test_a_name_holding_the_record_separator_is_recorded_and_undone(tmp_path, fake_openai):
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "a.py").write_text("x = 1\n")
    fake_openai.enqueue(
        Reply(calls=[Call("write", {"path": ODD, "content": "hi\n"})]), Reply("Done.")
    )

    done = run(fake_openai, ws, tmp_path, "write it")

    assert done.returncode == 0, done.stderr
    assert (ws / ODD).read_text() == "hi\n"
    listed = lathe(tmp_path, "checkpoints", "list", "-C", str(ws))
    assert listed.returncode == 0, listed.stderr
    assert "after turn 1" in listed.stdout and "A odd name .txt" in listed.stdout
    undone = lathe(tmp_path, "undo", "-C", str(ws))
    assert undone.returncode == 0, undone.stderr
    assert not (ws / ODD).exists()
    assert "deleted    odd\\x1ename\\x1f.txt" in undone.stdout


def test_a_store_holding_such_a_name_reads_in_a_later_process(tmp_path, home) -> None:
    # The commits an earlier lathe wrote are the ones written now: only the reading
    # changed, so a store recorded here is one an earlier lathe left.
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "a.py").write_text("x = 1\n")
    first = Checkpoints(ws, home)
    first.snapshot("before turn 1", turn=1)
    (ws / ODD).write_text("hi\n")
    (ws / "a.py").write_text("x = 2\n")
    (ws / "b\nc.txt").write_text("b\n")
    first._repo.commit(first._repo.stage_all(), first._repo.head(), "after turn 1\n")

    history = Checkpoints(ws, home).list()

    assert [c.n for c in history] == [2, 1]
    assert {(f.status, f.path) for f in history[0].files} == {
        ("added", ODD),
        ("modified", "a.py"),
        ("added", "b\nc.txt"),
    }


def test_a_log_lathe_cannot_read_is_the_store_damaged_error(cp, ws, monkeypatch) -> None:
    (ws / "a.py").write_text("x = 1\n")
    cp.snapshot("first")
    real = ShadowRepo._git

    def garbled(self, *args, **kwargs):
        out = real(self, *args, **kwargs)
        return b"\x1enot a record\x1f\0" if "log" in args else out

    monkeypatch.setattr(ShadowRepo, "_git", garbled)

    with pytest.raises(LatheError, match=r"cannot read.*move .* aside"):
        Checkpoints(ws, cp.home).list()


def test_undo_writes_out_the_control_characters_of_a_name(tmp_path, fake_openai):
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "a.py").write_text("x = 1\n")
    name = "q\x1b]52;c;ZWNobyBwd25lZA==\x07evil.txt"
    fake_openai.enqueue(Reply(calls=[bash(f"touch '{name}'")]), Reply("Done."))
    assert run(fake_openai, ws, tmp_path, "touch it").returncode == 0

    undone = lathe(tmp_path, "undo", "-C", str(ws))

    assert undone.returncode == 0, undone.stderr
    assert "\x1b" not in undone.stdout and "\x07" not in undone.stdout, repr(undone.stdout)
    assert "deleted    q\\x1b]52;c;ZWNobyBwd25lZA==\\x07evil.txt" in undone.stdout
