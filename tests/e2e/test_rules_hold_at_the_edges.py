"""Permission promises at their edges, through the real CLI: an allow rule for a command
does not let it change a protected path when no sandbox contains it, read-only mode
changes no file whatever an allow rule says, and a `*` in a rule's tool name covers the
tools with a path or a command as it covers the others."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from tests.fakes.openai_server import Call, Reply


def _path_without_bwrap(tmp_path: Path) -> str:
    """A PATH that has every command this one has except bubblewrap, so that the run
    finds no sandbox."""
    folder = tmp_path / "bin-without-bwrap"
    folder.mkdir()
    for entry in os.environ["PATH"].split(os.pathsep):
        if not os.path.isdir(entry):
            continue
        for name in os.listdir(entry):
            target = folder / name
            if name == "bwrap" or target.exists() or target.is_symlink():
                continue
            target.symlink_to(os.path.join(entry, name))
    assert shutil.which("bwrap", path=str(folder)) is None
    return str(folder)


def _lathe(server, ws: Path, tmp_path: Path, *args: str, path: str | None = None):
    env = {k: v for k, v in os.environ.items() if not k.startswith(("LATHE_", "OPENAI_"))}
    env.update({"OPENAI_API_KEY": "sk-test", "LATHE_HOME": str(tmp_path / "home")})
    env["LATHE_CONFIG"] = str(tmp_path / "no-user-config.toml")
    (tmp_path / "no-user-config.toml").write_text("")
    if path is not None:
        env["PATH"] = path
    return subprocess.run(
        [sys.executable, "-m", "lathe", "run", "--json", "--model", "m", "--base-url",
         server.base_url, "-C", str(ws), *args, "do it"],
        cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120,
        stdin=subprocess.DEVNULL,
    )  # fmt: skip


def _tool_results(result: subprocess.CompletedProcess) -> list[dict]:
    events = [json.loads(line) for line in result.stdout.splitlines()]
    return [e for e in events if e["type"] == "tool_finished"]


def _git_workspace(tmp_path: Path) -> Path:
    ws = tmp_path / "ws"
    ws.mkdir()
    subprocess.run(["git", "init", "-q", str(ws)], check=True)
    (ws / "app.py").write_text("x = 1\n")
    return ws


@pytest.mark.parametrize("mode", ["auto", "ask"])
def test_an_allowed_command_may_not_change_a_protected_path_without_a_sandbox(
    tmp_path, fake_openai, mode
):
    ws = _git_workspace(tmp_path)
    config_before = (ws / ".git" / "config").read_text()
    attacks = [
        "printf '[core]\\n\\tfsmonitor = touch-FSMON\\n' >> .git/config",
        "printf 'touch ENVRC_RAN' > .envrc",
        "printf x | tee .mcp.json",
    ]
    fake_openai.enqueue(
        *(Reply(calls=[Call("bash", {"command": attack})]) for attack in attacks),
        Reply(calls=[Call("bash", {"command": "printf fine > notes.txt"})]),
        Reply("Done."),
    )

    result = _lathe(
        fake_openai, ws, tmp_path, "--approval", mode, "--allow", "bash(printf:*)",
        "--allow", "bash(tee:*)", path=_path_without_bwrap(tmp_path),
    )  # fmt: skip

    assert result.returncode == 0, result.stderr
    finished = _tool_results(result)
    for event in finished[:3]:
        assert event["is_error"], event
        assert "protected path" in event["details"]["denied"], event
    assert not finished[3]["is_error"], finished[3]
    assert (ws / ".git" / "config").read_text() == config_before
    assert not (ws / ".envrc").exists() and not (ws / ".mcp.json").exists()
    assert (ws / "notes.txt").read_text() == "fine"


def test_read_only_mode_changes_no_file_whatever_an_allow_rule_says(tmp_path, fake_openai):
    ws = _git_workspace(tmp_path)
    fake_openai.enqueue(
        Reply(calls=[Call("write", {"path": "new.txt", "content": "x"})]),
        Reply(calls=[Call("edit", {"path": "app.py", "old_string": "x = 1",
                                   "new_string": "x = 2"})]),
        Reply("Done."),
    )  # fmt: skip

    result = _lathe(fake_openai, ws, tmp_path, "--approval", "read-only", "--allow", "edit(**)")

    assert result.returncode == 0, result.stderr
    finished = _tool_results(result)
    assert [e["details"]["denied"] for e in finished] == ["read-only mode"] * 2
    assert not (ws / "new.txt").exists()
    assert (ws / "app.py").read_text() == "x = 1\n"


def test_a_star_in_a_rules_tool_name_covers_path_and_command_tools(tmp_path, fake_openai):
    ws = _git_workspace(tmp_path)
    calls = [
        Call("read", {"path": "app.py"}),
        Call("write", {"path": "new.txt", "content": "x"}),
        Call("bash", {"command": "echo hi"}),
    ]
    fake_openai.enqueue(*(Reply(calls=[call]) for call in calls), Reply("Done."))

    result = _lathe(fake_openai, ws, tmp_path, "--approval", "full", "--deny", "*")

    assert result.returncode == 0, result.stderr
    assert [e["details"].get("denied") for e in _tool_results(result)] == ["*"] * 3
    assert not (ws / "new.txt").exists()

    fake_openai.enqueue(
        Reply(calls=[Call("write", {"path": "new.txt", "content": "x"})]),
        Reply(calls=[Call("read", {"path": "app.py"})]),
        Reply("Done."),
    )
    result = _lathe(fake_openai, ws, tmp_path, "--approval", "full", "--deny", "wr*")

    denied = [e["details"].get("denied") for e in _tool_results(result)]
    assert denied == ["wr*", None], denied
    assert not (ws / "new.txt").exists()


def test_a_deny_rule_holds_for_a_script_an_earlier_call_wrote(tmp_path, fake_openai):
    # The script was held to the hard-deny list only: the push went through.
    ws = _git_workspace(tmp_path)
    remote = tmp_path / "remote.git"
    subprocess.run(["git", "init", "-q", "--bare", str(remote)], check=True)
    for args in (["remote", "add", "origin", str(remote)], ["add", "app.py"],
                 ["-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "x"]):  # fmt: skip
        subprocess.run(["git", "-C", str(ws), *args], check=True)
    script = "#!/bin/sh\nset -e\ngit push origin HEAD:main\n"
    fake_openai.enqueue(
        Reply(calls=[Call("write", {"path": "ship.sh", "content": script})]),
        Reply(calls=[Call("bash", {"command": "sh ship.sh"})]),
        Reply("Done."),
    )
    result = _lathe(fake_openai, ws, tmp_path, "--approval", "full", "--deny", "bash(git push:*)")
    assert result.returncode == 0, result.stderr
    denied = [e["details"].get("denied") for e in _tool_results(result)]
    assert denied == [None, "bash(git push:*)"], denied
    heads = subprocess.run(["git", "-C", str(remote), "branch"], capture_output=True, text=True)
    assert heads.stdout == ""
