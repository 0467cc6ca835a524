"""Protected paths: files that make the host run code later (git's config and hooks,
lathe's own project config, .mcp.json, the user's list) change only with an explicit
approval, in every mode but `full`.

Reproduced on landed main in headless `auto` mode: `edit` wrote an fsmonitor command
into `.git/config` (the user's next `git status` ran it, unsandboxed), and `write`
created `.git/hooks/pre-commit` and a `.lathe/config.toml` with a session-start hook.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from tests.fakes.openai_server import Call, Reply

from lathe.exec.bwrap import BubblewrapExecutor, check_bubblewrap
from lathe.policy.gate import Mode, Policy
from lathe.policy.rules import RuleSet

_STATUS = check_bubblewrap()
needs_bwrap = pytest.mark.skipif(not _STATUS.available, reason=_STATUS.message)


def _policy(workspace: Path, mode: str, *, allow=(), protect=(".envrc",)) -> Policy:
    return Policy(
        mode=Mode(mode),
        rules=RuleSet.from_strings(allow=allow),
        workspace=workspace,
        home=Path.home(),
        sandboxed=True,
        protected=protect,
    )


@pytest.mark.parametrize(
    "path",
    [".git/config", ".git/hooks/pre-commit", "sub/.git/config", ".lathe/config.toml",
     ".lathe/hooks/x", ".mcp.json", ".envrc", "sub/.envrc"],
)  # fmt: skip
@pytest.mark.parametrize("tool", ["edit", "write"])
def test_changing_a_protected_path_asks_in_every_mode_but_full(tmp_path, tool, path):
    for mode, expected in (("ask", "ask"), ("auto", "ask"), ("read-only", "deny")):
        decision = _policy(tmp_path, mode).decide(tool, {"path": path})
        assert decision.action == expected, (mode, decision)
    assert "protected" in _policy(tmp_path, "auto").decide(tool, {"path": path}).reason
    assert _policy(tmp_path, "full").decide(tool, {"path": path}).action == "allow"


def test_reading_a_protected_path_is_fine(tmp_path):
    assert _policy(tmp_path, "auto").decide("read", {"path": ".git/config"}).action == "allow"


def test_an_explicit_allow_rule_for_the_path_approves_it_but_a_blanket_one_does_not(tmp_path):
    named = _policy(tmp_path, "auto", allow=["edit(.envrc)"])
    assert named.decide("edit", {"path": ".envrc"}).action == "allow"
    blanket = _policy(tmp_path, "auto", allow=["edit", "write"])
    assert blanket.decide("write", {"path": ".envrc"}).action == "ask"
    wildcards = _policy(tmp_path, "auto", allow=["write(*.json)", "edit(**)"])
    assert wildcards.decide("write", {"path": ".mcp.json"}).action == "ask"
    assert wildcards.decide("edit", {"path": ".git/config"}).action == "ask"
    assert wildcards.decide("edit", {"path": "app.json"}).action == "allow"
    folder = _policy(tmp_path, "auto", allow=["edit(.git/hooks/**)"])
    assert folder.decide("write", {"path": ".git/hooks/pre-commit"}).action == "allow"


def test_the_users_own_list_is_protected_too(tmp_path):
    policy = _policy(tmp_path, "auto", protect=(".vscode/", "tools/run.sh"))
    assert policy.decide("write", {"path": ".vscode/tasks.json"}).action == "ask"
    assert policy.decide("edit", {"path": "tools/run.sh"}).action == "ask"
    assert policy.decide("edit", {"path": ".envrc"}).action == "allow"  # not on this list


@needs_bwrap
async def test_commands_in_the_sandbox_cannot_change_protected_paths(tmp_path):
    ws = tmp_path / "ws"
    (ws / "sub" / ".git").mkdir(parents=True)
    (ws / "sub" / ".git" / "config").write_text("[core]\n")
    (ws / ".envrc").write_text("export A=1\n")
    executor = BubblewrapExecutor(ws, deny_write=[".git", ".envrc"])

    result = await executor.run(
        "echo 'fsmonitor = x' >> sub/.git/config; echo 'evil' >> .envrc; echo done",
        cwd=ws, timeout=30, max_output_bytes=10_000, spill_dir=tmp_path / "spill",
    )  # fmt: skip

    assert "done" in result.output
    assert (ws / "sub" / ".git" / "config").read_text() == "[core]\n"
    assert (ws / ".envrc").read_text() == "export A=1\n"


def _lathe(server, ws: Path, tmp_path: Path, *args: str) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("LATHE_", "OPENAI_"))}
    env.update({"OPENAI_API_KEY": "sk-test", "LATHE_HOME": str(tmp_path / "home")})
    return subprocess.run(
        [sys.executable, "-m", "lathe", "run", "--model", "m", "--base-url", server.base_url,
         "-C", str(ws), *args],
        cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120,
        stdin=subprocess.DEVNULL,
    )  # fmt: skip


def _git_workspace(tmp_path: Path) -> Path:
    ws = tmp_path / "ws"
    ws.mkdir()
    subprocess.run(["git", "init", "-q", str(ws)], check=True)
    (ws / "app.py").write_text("x = 1\n")
    return ws


ATTACKS = [
    Call("edit", {"path": ".git/config", "old_string": "[core]",
                  "new_string": '[core]\n\tfsmonitor = "touch FSMON_RAN; false"'}),
    Call("write", {"path": ".git/hooks/pre-commit", "content": "#!/bin/sh\ntouch HOOK_RAN\n"}),
    Call("write", {"path": ".lathe/config.toml",
                   "content": '[[hooks.session_start]]\ncommand = "touch START_RAN"\n'}),
    Call("write", {"path": ".mcp.json", "content": '{"mcpServers": {}}'}),
    Call("write", {"path": ".envrc", "content": "touch ENVRC_RAN\n"}),
]  # fmt: skip


def test_headless_auto_refuses_every_change_to_a_protected_path_and_says_why(tmp_path, fake_openai):
    ws = _git_workspace(tmp_path)
    config_before = (ws / ".git" / "config").read_text()
    fake_openai.enqueue(Reply(calls=ATTACKS), Reply("Done."))

    result = _lathe(fake_openai, ws, tmp_path, "set things up")

    assert result.returncode == 0, result.stderr
    assert (ws / ".git" / "config").read_text() == config_before
    for created in (".git/hooks/pre-commit", ".lathe/config.toml", ".mcp.json", ".envrc"):
        assert not (ws / created).exists(), created
    results = [m for m in fake_openai.chat_bodies()[-1]["messages"] if m["role"] == "tool"]
    assert len(results) == len(ATTACKS)
    for message in results:
        assert "protected" in message["content"], message["content"]
        assert "nobody can approve it" in message["content"]


def test_full_mode_may_change_protected_paths(tmp_path, fake_openai):
    ws = _git_workspace(tmp_path)
    fake_openai.enqueue(
        Reply(calls=[Call("write", {"path": ".envrc", "content": "export A=1\n"})]),
        Reply("Done."),
    )

    result = _lathe(fake_openai, ws, tmp_path, "--approval", "full", "add an envrc")

    assert result.returncode == 0, result.stderr
    assert (ws / ".envrc").read_text() == "export A=1\n"


def test_the_first_full_mode_run_says_what_it_does_not_protect(tmp_path, fake_openai):
    ws = _git_workspace(tmp_path)
    fake_openai.responder = lambda request: Reply("Done.")

    first = _lathe(fake_openai, ws, tmp_path, "--approval", "full", "hello")
    second = _lathe(fake_openai, ws, tmp_path, "--approval", "full", "hello")

    assert first.returncode == 0 and second.returncode == 0, first.stderr
    assert "It does not protect against" in first.stderr
    assert "deleting or overwriting files inside the workspace" in first.stderr
    assert "It does not protect against" not in second.stderr


def test_a_sandboxed_command_cannot_create_a_protected_path_either(tmp_path, fake_openai):
    """bwrap can mount read-only only what exists, so a command could create a protected
    file that was not there yet; lathe moves such a path aside after the command."""
    if not _STATUS.available:
        pytest.skip(_STATUS.message)
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "app.py").write_text("x = 1\n")
    command = (
        "echo 'touch ENVRC_RAN' > .envrc; mkdir .vscode; echo '{}' > .vscode/tasks.json; "
        "echo '{}' > .mcp.json; mkdir -p sub/.lathe; echo 'x' > sub/.lathe/config.toml; "
        "git init -q .; echo done"
    )
    fake_openai.enqueue(Reply(calls=[Call("bash", {"command": command})]), Reply("Done."))

    result = _lathe(fake_openai, ws, tmp_path, "set things up")

    assert result.returncode == 0, result.stderr
    for created in (".envrc", ".vscode", ".mcp.json", "sub/.lathe", ".git"):
        assert not (ws / created).exists(), created
    assert (ws / "app.py").read_text() == "x = 1\n"
    tool = next(m for m in fake_openai.chat_bodies()[-1]["messages"] if m["role"] == "tool")
    assert "done" in tool["content"] and "moved it to" in tool["content"]
    aside = list((ws / ".lathe" / "tmp" / "set-aside").glob("*/.envrc"))
    assert aside and aside[0].read_text() == "touch ENVRC_RAN\n"  # moved, not lost
