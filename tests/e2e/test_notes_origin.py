"""The notes a real run adds to its conversation are lathe's, not the person's."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from tests.fakes.openai_server import Reply


def test_a_real_runs_notes_are_recorded_as_lathes_and_shown_so(tmp_path: Path, fake_openai):
    """The baseline check and the verify feedback a run adds are recorded with
    origin "lathe", so `sessions show` does not present them as the person's turns."""
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "check.sh").write_text("echo broken; exit 1\n")
    fake_openai.enqueue(Reply("Done."), Reply("Done again."))
    env = {k: v for k, v in os.environ.items() if not k.startswith(("LATHE_", "OPENAI_"))}
    env.update({"OPENAI_API_KEY": "sk-test", "LATHE_HOME": str(tmp_path / "home")})
    base = [sys.executable, "-m", "lathe"]
    common = dict(cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120)

    run = subprocess.run(
        [*base, "run", "--model", "m", "--base-url", fake_openai.base_url, "-C", str(ws),
         "--approval", "full", "--verify", "sh check.sh", "--max-turns", "2", "--json",
         "Fix the check"],
        stdin=subprocess.DEVNULL, **common,
    )  # fmt: skip

    started = next(json.loads(line) for line in run.stdout.splitlines() if '"run_started"' in line)
    shown = subprocess.run([*base, "sessions", "show", started["session_id"]],
                           **common)  # fmt: skip
    assert shown.returncode == 0, shown.stderr
    users = [b for b in shown.stdout.split("\n\n") if b.startswith("── user")]
    notes = [b for b in shown.stdout.split("\n\n") if b.startswith("── lathe")]
    assert len(users) == 1 and users[0].endswith("Fix the check")
    assert any("Before you started" in n for n in notes)
    assert any("You said you were done" in n for n in notes)
