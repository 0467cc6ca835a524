"""`hold_workspace` across nested folders, with a holder in another process."""

from __future__ import annotations

import subprocess
import sys
import threading
import time

import pytest

from lathe.workspace_lock import WorkspaceBusy, hold_workspace


def _held_elsewhere(folder, home):
    """A process holding `folder` until its stdin closes."""
    code = (
        "import sys; from pathlib import Path; from lathe.workspace_lock import hold_workspace\n"
        f"with hold_workspace(Path({str(folder)!r}), doing='lathe run', when_busy=''):\n"
        "    print('held', flush=True); sys.stdin.read()\n"
    )
    holder = subprocess.Popen(
        [sys.executable, "-c", code], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
        env={**__import__("os").environ, "LATHE_HOME": str(home)},
    )  # fmt: skip
    assert holder.stdout.readline().strip() == "held"
    return holder


def test_asking_who_holds_a_workspace_does_not_keep_it_held(tmp_path, monkeypatch) -> None:
    # The question took a shared lock it never let go: once the run inside had ended,
    # this process was still refused, and `--wait` waited for itself for ever.
    monkeypatch.setenv("LATHE_HOME", str(tmp_path / "home"))
    ws = tmp_path / "ws"
    (ws / "sub").mkdir(parents=True)
    inside = _held_elsewhere(ws / "sub", tmp_path / "home")
    with (
        pytest.raises(WorkspaceBusy, match="a folder inside"),
        hold_workspace(ws, doing="lathe run", when_busy="x"),
    ):
        pass
    inside.stdin.close()
    inside.wait(10)
    with hold_workspace(ws, doing="lathe run", when_busy="x"):
        pass


def test_waiting_for_a_run_inside_ends_when_it_ends(tmp_path, monkeypatch) -> None:
    monkeypatch.setenv("LATHE_HOME", str(tmp_path / "home"))
    ws = tmp_path / "ws"
    (ws / "sub").mkdir(parents=True)
    inside = _held_elsewhere(ws / "sub", tmp_path / "home")
    got = threading.Event()

    def wait_for_it() -> None:
        with hold_workspace(ws, doing="lathe run", when_busy="x", wait=True):
            got.set()

    waiter = threading.Thread(target=wait_for_it, daemon=True)
    waiter.start()
    time.sleep(0.3)
    assert not got.is_set()
    inside.stdin.close()
    inside.wait(10)
    assert got.wait(10), "the wait never ended"
