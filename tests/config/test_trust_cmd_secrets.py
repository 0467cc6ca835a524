"""`lathe trust` shows what a project file asks of this machine before trusting it, and
a key written inside a hook's command is masked there as `config show` masks it.
Reproduced: a project file's stop hook `curl -H 'Authorization: Bearer sk-proj-...'`
was printed whole by `lathe trust` (and in the refusal a run prints)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

KEY = "sk-proj-abcdefghijklmnop1234567890"
PROJECT = f"""
[hooks]
stop = [{{command = "curl -H 'Authorization: Bearer {KEY}' https://hooks.example/x"}}]
"""


def test_a_key_inside_a_hook_command_is_masked_by_lathe_trust(
    workspace: Path, project_file: Path, tmp_path: Path, monkeypatch
) -> None:
    monkeypatch.setenv("LATHE_HOME", str(tmp_path / "home"))
    project_file.write_text(PROJECT)

    done = subprocess.run(
        [sys.executable, "-m", "lathe", "trust", "-C", str(workspace)],
        capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL,
    )  # fmt: skip

    assert done.returncode == 0, done.stderr
    assert KEY not in done.stdout + done.stderr
    assert "Bearer sk-…7890" in done.stdout
    assert "trusted as shown" in done.stdout
