"""The interactive session asks once before it uses a project file's hooks."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

from tests.ui.conftest import _SRC
from tests.ui.tmux import Terminal


def _terminal(workspace: Path, tmp_path: Path, base_url: str) -> Terminal:
    env = {
        "PATH": os.environ["PATH"], "HOME": str(tmp_path), "LANG": "C.UTF-8",
        "XDG_CONFIG_HOME": str(tmp_path / "config"), "LATHE_HOME": str(tmp_path / "home"),
        "OPENAI_API_KEY": "test-key", "TERM": "xterm-256color", "PYTHONPATH": _SRC,
    }  # fmt: skip
    argv = [sys.executable, "-m", "lathe", "--model", "m", "--base-url", base_url]
    return Terminal(argv, env=env, cwd=str(workspace))


def _with_hook(workspace: Path) -> None:
    (workspace / ".lathe").mkdir()
    (workspace / ".lathe" / "config.toml").write_text(
        '[[hooks.stop]]\ncommand = "touch STOP_RAN"\n'
    )


def test_trusting_a_project_hook_at_the_prompt_remembers_it(workspace, tmp_path, fake_openai):
    _with_hook(workspace)
    terminal = _terminal(workspace, tmp_path, fake_openai.base_url)
    try:
        terminal.wait_for("Trust these settings", timeout=20)
        assert 'hooks.stop = [{"command": "touch STOP_RAN"' in terminal.screen()
        terminal.send("y")
        terminal.wait_for(r"^> ", timeout=20)
    finally:
        terminal.close()
    store = json.loads((tmp_path / "home" / "trusted-projects.json").read_text())
    assert str((workspace / ".lathe" / "config.toml").resolve()) in store


def test_refusing_trust_starts_nothing_and_says_how_to_trust_later(
    workspace, tmp_path, fake_openai
):
    _with_hook(workspace)
    terminal = _terminal(workspace, tmp_path, fake_openai.base_url)
    try:
        terminal.wait_for("Trust these settings", timeout=20)
        terminal.send("n")
        terminal.wait_exit(timeout=20)
        assert "lathe trust" in terminal.screen()
    finally:
        terminal.close()
    assert not (tmp_path / "home" / "trusted-projects.json").exists()
