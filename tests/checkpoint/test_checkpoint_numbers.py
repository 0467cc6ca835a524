"""A checkpoint has one number, the same in `lathe sessions show` and `lathe checkpoints
list`, kept through undo and restore, and taken by `lathe checkpoints restore`.

Reproduced on main with the real CLI: `sessions show` named checkpoints by commit
(`[checkpoint 3f2a… before turn 2]`, and it was the state after the turn), `checkpoints
list` numbered them from the newest, and every undo shifted those numbers by two.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

from tests.fakes.openai_server import Call, Reply

from lathe.session import SessionStore


def _lathe(*args: str, cwd: Path, home: Path) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("LATHE_", "OPENAI_"))}
    env.update({"OPENAI_API_KEY": "sk-test", "LATHE_HOME": str(home)})
    env.pop("COLUMNS", None)
    result = subprocess.run(
        [sys.executable, "-m", "lathe", *args], cwd=cwd, env=env, capture_output=True,
        text=True, timeout=120, stdin=subprocess.DEVNULL,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    return result


def _edit(old: str, new: str) -> Reply:
    return Reply(calls=[Call("edit", {"path": "app.py", "old_string": old, "new_string": new})])


def _shown(session_id: str, ws: Path, home: Path) -> dict[int, int]:
    """Turn -> checkpoint number, as `lathe sessions show` names them."""
    text = _lathe("sessions", "show", session_id, cwd=ws, home=home).stdout
    found = re.findall(r"^\[checkpoint #(\d+) after turn (\d+)\]$", text, re.MULTILINE)
    return {int(turn): int(n) for n, turn in found}


def _listed(ws: Path, home: Path) -> dict[int, str]:
    """Checkpoint number -> label, as `lathe checkpoints list` prints them (piped)."""
    rows = _lathe("checkpoints", "list", "-C", str(ws), cwd=ws, home=home).stdout.splitlines()
    listed = {}
    for row in rows:
        number, _time, _kind, label, _files = row.split("\t")
        listed[int(number.removeprefix("#"))] = label
    return listed


def test_one_number_for_a_checkpoint_in_both_listings_through_undo_and_restore(
    tmp_path, fake_openai
):
    ws, home = tmp_path / "ws", tmp_path / "home"
    ws.mkdir()
    (ws / "app.py").write_text("value = 0\n")
    fake_openai.enqueue(
        _edit("value = 0", "value = 1"),
        _edit("value = 1", "value = 2"),
        _edit("value = 2", "value = 3"),
        Reply("Counted to three."),
    )
    _lathe("run", "-m", "m", "--base-url", fake_openai.base_url, "-C", str(ws), "count up",
           cwd=tmp_path, home=home)  # fmt: skip
    session_id = SessionStore(home).list(ws)[0].id

    shown = _shown(session_id, ws, home)
    listed = _listed(ws, home)
    assert sorted(shown) == [1, 2, 3]
    assert {listed[shown[turn]] for turn in shown} == {f"after turn {t}" for t in (1, 2, 3)}
    assert all(listed[n] == f"after turn {turn}" for turn, n in shown.items())
    assert sorted(listed, reverse=True) == list(listed)  # newest first

    _lathe("undo", "-C", str(ws), cwd=ws, home=home)

    assert (ws / "app.py").read_text() == "value = 2\n"
    after_undo = _listed(ws, home)
    assert {n: after_undo[n] for n in listed} == listed  # nothing renumbered
    assert min(set(after_undo) - set(listed)) > max(listed)  # new ones count on
    assert _shown(session_id, ws, home) == shown

    restored = _lathe(
        "checkpoints", "restore", f"#{shown[1]}", "-C", str(ws), cwd=ws, home=home
    ).stdout
    assert (ws / "app.py").read_text() == "value = 1\n"
    backup = int(re.search(r"the state before this restore is checkpoint #(\d+)", restored,
                           re.IGNORECASE).group(1))  # fmt: skip
    assert backup == max(after_undo)  # nothing had changed since the undo's checkpoint
    after_restore = _listed(ws, home)
    assert after_restore[max(after_restore)] == f"restore of #{shown[1]} (after turn 1)"
    assert {n: after_restore[n] for n in after_undo} == after_undo

    _lathe("checkpoints", "restore", str(shown[3]), "-C", str(ws), cwd=ws, home=home)
    assert (ws / "app.py").read_text() == "value = 3\n"
