"""An interactive turn that changes files is written to its session as a `checkpoint`
entry, as a `lathe run` turn is; driven for real in tmux against the fake server. The
interactive session had none, although `lathe checkpoints list` had the checkpoints: its
transcript named no checkpoint, and a fork of it resumed later was not told which files
changed since."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from tests.fakes.openai_server import Call, FakeOpenAIServer, Reply

pytest.importorskip("lathe.checkpoint")


def _lathe(home: Path, workspace: Path, *args: str) -> str:
    env = {**os.environ, "LATHE_HOME": str(home)}
    done = subprocess.run(
        [sys.executable, "-m", "lathe", *args], cwd=workspace, env=env,
        capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    return done.stdout


def _sessions(home: Path) -> dict[str, list[dict]]:
    found = {}
    for path in (home / "sessions").glob("*/*.jsonl"):
        lines = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
        found[lines[0]["id"]] = lines[1:]
    return found


def test_a_turn_that_changed_files_is_a_checkpoint_entry_a_fork_goes_on_from(
    launch, fake_openai: FakeOpenAIServer, workspace: Path, lathe_home: Path
) -> None:
    edit = {"path": "app.py", "old_string": "a - b", "new_string": "a + b"}
    fake_openai.enqueue(Reply(calls=[Call("edit", edit)]), Reply("Edited."), Reply("Re-read."))
    term = launch("--approval", "full")
    term.send("fix it")
    term.wait_for(r"^Edited\.")
    term.send("/fork")
    screen = term.wait_for(r"continuing in the fork")
    original, fork = screen.split("forked session ")[1].split(";")[0].split(" into ")
    term.send("/exit")
    term.wait_exit()

    entries = _sessions(lathe_home)[original]
    [checkpoint] = [e for e in entries if e["type"] == "checkpoint"]
    assert checkpoint["turn"] == 1
    [number] = [
        line.split("\t")[0].lstrip("#")
        for line in _lathe(lathe_home, workspace, "checkpoints", "list").splitlines()
        if "after turn 1" in line
    ]
    shown = _lathe(lathe_home, workspace, "sessions", "show", original)
    assert f"[checkpoint #{number} after turn 1]" in shown, shown

    # The fork's own id names no checkpoint: what it was told comes from its parent's
    # entry, before the branch point.
    workspace.joinpath("app.py").write_text("def add(a, b):\n    return b + a\n")
    again = launch("--resume", fork)
    again.wait_for(r"ctx \d+% of")
    again.send("go on")
    again.wait_for(r"^Re-read\.")
    users = [m["content"] for m in fake_openai.chat_bodies()[-1]["messages"] if m["role"] == "user"]
    assert users[0] == "fix it" and users[-1].endswith("go on")  # lathe's note joined
    assert "these files changed in the workspace" in users[-1] and "app.py" in users[-1]
