"""A run in a folder inside another run's workspace (or around it) changes the same files:
the other run's turn checkpoint recorded those changes, and its `lathe undo` reverted
another run's work. One run at a time in any two workspaces that overlap; folders side by
side still run together."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from tests.e2e.test_run_edges import _env, lathe_run, run_in_its_baseline_check
from tests.fakes.openai_server import Reply


def _tree(tmp_path: Path) -> Path:
    ws = tmp_path / "ws"
    for folder in (ws / "sub" / "deeper", ws / "side"):
        folder.mkdir(parents=True)
    return ws


def test_a_run_inside_a_running_workspace_is_refused(tmp_path, fake_openai):
    ws = _tree(tmp_path)
    with run_in_its_baseline_check(fake_openai, ws, tmp_path) as outer:
        refused = lathe_run(fake_openai, ws / "sub" / "deeper", tmp_path, "another task")
    assert refused.returncode == 2, refused.stderr
    assert f"pid {outer.pid}" in refused.stderr and str(ws) in refused.stderr
    assert fake_openai.chat_bodies() == []


def test_a_run_around_a_running_workspace_is_refused_and_so_is_its_undo(tmp_path, fake_openai):
    ws = _tree(tmp_path)
    with run_in_its_baseline_check(fake_openai, ws / "sub", tmp_path):
        refused = lathe_run(fake_openai, ws, tmp_path, "another task")
        undo = subprocess.run(
            [sys.executable, "-m", "lathe", "undo", "-C", str(ws)], cwd=tmp_path,
            env=_env(tmp_path), capture_output=True, text=True, timeout=60,
        )  # fmt: skip
    assert refused.returncode == 2, refused.stderr
    assert refused.stderr.startswith("lathe: ") and "inside" in refused.stderr
    assert "--wait" in refused.stderr
    assert undo.returncode == 2 and "inside" in undo.stderr
    assert fake_openai.chat_bodies() == []


def test_runs_in_folders_side_by_side_go_on_together(tmp_path, fake_openai):
    ws = _tree(tmp_path)
    with run_in_its_baseline_check(fake_openai, ws / "sub", tmp_path):
        fake_openai.enqueue(Reply("Side done."))
        side = lathe_run(fake_openai, ws / "side", tmp_path, "another task")
    assert side.returncode == 0, side.stderr
    assert side.stdout.strip() == "Side done."
