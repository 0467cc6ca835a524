"""`lathe memory show` reports the budgets a run here applies: a project file's raised
`memory.instructions_max_bytes` or `memory_max_bytes` applies only once trusted
(`config.trust`), and until then the report shows the budget in effect and names the
setting it ignores. Reproduced: an untrusted `instructions_max_bytes = 10000000` was
reported as "budget 10,000,000 bytes" while `lathe run` refused it."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

PROJECT = "[memory]\ninstructions_max_bytes = 10000000\nmemory_max_bytes = 100000\n"


def _lathe(*args: str, home: Path) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("LATHE_", "OPENAI_"))}
    env.update(LATHE_HOME=str(home), LATHE_CONFIG=os.devnull)
    return subprocess.run(
        [sys.executable, "-m", "lathe", *args],
        env=env, capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL,
    )  # fmt: skip


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    ws = tmp_path / "repo"
    subprocess.run(["git", "init", "-q", str(ws)], check=True)
    (ws / ".lathe").mkdir()
    (ws / ".lathe" / "config.toml").write_text(PROJECT)
    (ws / "AGENTS.md").write_text("Use tabs.\n")
    return ws


def test_an_untrusted_budget_is_reported_as_ignored(ws: Path, tmp_path: Path) -> None:
    shown = _lathe("memory", "show", "-C", str(ws), home=tmp_path / "home")

    assert shown.returncode == 0, shown.stderr
    lines = shown.stdout.splitlines()
    project_file = ws / ".lathe" / "config.toml"
    assert lines[:3] == [
        f"Ignored until you trust them with `lathe trust` ({project_file} sets them):",
        "  memory.instructions_max_bytes = 10000000",
        "  memory.memory_max_bytes = 100000",
    ]
    assert (
        lines[4] == "Instruction files, in the order they are read (1 file, budget 32,768 bytes):"
    )
    assert any(line.endswith("(0 entries, 0 of 8,192 bytes)") for line in lines)
    assert "10,000,000" not in shown.stdout


def test_a_trusted_budget_is_the_one_reported(ws: Path, tmp_path: Path) -> None:
    home = tmp_path / "home"
    assert _lathe("trust", "-C", str(ws), home=home).returncode == 0

    shown = _lathe("memory", "show", "-C", str(ws), home=home)

    assert shown.returncode == 0, shown.stderr
    lines = shown.stdout.splitlines()
    assert lines[0] == (
        "Instruction files, in the order they are read (1 file, budget 10,000,000 bytes):"
    )
    assert any(line.endswith("(0 entries, 0 of 100,000 bytes)") for line in lines)
    assert "Ignored until" not in shown.stdout
