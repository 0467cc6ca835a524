"""The workspace files code run on the host names — a hook's command, an MCP server's
command and arguments — are protected, however the command spells them."""

from __future__ import annotations

import os
from pathlib import Path

from lathe.config.schema import HookCommand, HooksConfig
from lathe.hooks.command import files_hooks_run
from lathe.policy.rules import files_named


def _workspace(tmp_path: Path) -> Path:
    ws = tmp_path / "ws"
    (ws / "tools").mkdir(parents=True)
    (ws / "tools" / "guard.sh").write_text("exit 0\n")
    (ws / "guard.sh").symlink_to("tools/guard.sh")
    return ws


def test_a_link_is_protected_with_its_target(tmp_path):
    # Only the target was: `ln -sf evil.sh guard.sh` then ran evil.sh at the next hook.
    ws = _workspace(tmp_path)
    assert files_named(["./guard.sh"], ws, ws) == ["/tools/guard.sh", "/guard.sh"]


def test_a_hook_command_is_split_as_the_shell_splits_it(tmp_path):
    # `./guard.sh>/dev/null; true` was one word naming no file.
    ws = _workspace(tmp_path)
    hooks = HooksConfig(
        pre_tool=[HookCommand(command="./tools/guard.sh>/dev/null; true")],
        stop=[HookCommand(command='bash "$PWD/guard.sh" && echo done')],
    )
    assert files_hooks_run(hooks, ws) == ("/tools/guard.sh", "/guard.sh")


def test_what_is_outside_the_workspace_or_unknown_is_not_named(tmp_path):
    ws = _workspace(tmp_path)
    (tmp_path / "outside.sh").write_text("x\n")
    (ws / "out.sh").symlink_to(tmp_path / "outside.sh")
    words = [str(tmp_path / "outside.sh"), "${X}/guard.sh", "missing.sh", "-v"]
    assert files_named(words, ws, ws) == []
    assert files_named(["out.sh"], ws, ws) == ["/out.sh"]  # the link, which the model could swap
    assert os.path.islink(ws / "out.sh")
