"""`lathe run` with config hooks that misbehave: they run through the executor, so what
they print is capped and what they start is stopped like a command's (issue 14, item 11)."""

from __future__ import annotations

import contextlib
import os
import signal
import time
from pathlib import Path

from tests.e2e.test_calculator import run_against, workspace
from tests.fakes.openai_server import Call, Reply
from tests.tools.helpers import process_alive

FIFTY_MB = 50 * 1024 * 1024


def _with_hooks(ws: Path, toml: str) -> Path:
    (ws / ".lathe").mkdir(exist_ok=True)
    (ws / ".lathe" / "config.toml").write_text(toml)
    return ws


def _tool_results(server) -> list[dict]:
    return [m for m in server.chat_bodies()[1]["messages"] if m["role"] == "tool"]


def test_a_hook_that_prints_50_mb_is_capped(tmp_path, fake_openai) -> None:
    flood = f"head -c {FIFTY_MB} /dev/zero | tr '\\0' x"
    ws = _with_hooks(
        workspace(tmp_path),
        "[[hooks.pre_tool]]\n"
        f"command = '''{flood} >&2; exit 2'''\n"
        "tools = ['read']\n"
        "[[hooks.post_tool]]\n"
        f"command = '''printf '{{\"content\": \"'; {flood}; printf '\"}}' '''\n"
        "tools = ['bash']\n",
    )
    fake_openai.enqueue(
        Reply(calls=[Call("read", {"path": "calculator.py"}),
                     Call("bash", {"command": "echo small"})]),
        Reply("ok"),
    )  # fmt: skip

    result = run_against(fake_openai, ws, tmp_path, "--approval", "full", "--trust-project", "go")

    assert result.returncode == 0, result.stderr[-2000:]
    blocked, replaced = _tool_results(fake_openai)
    # The pre_tool hook's 50 MB of stderr is the reason: a head and a tail of it.
    assert "Blocked by a hook: xxx" in blocked["content"][:40]
    assert "bytes omitted" in blocked["content"] and len(blocked["content"]) < 64 * 1024
    # The post_tool hook's 50 MB of "JSON" was cut, so it is no JSON and rewrites nothing.
    assert replaced["content"].startswith("small\n")


def test_a_hook_that_ignores_sigterm_and_forks_is_stopped_with_its_child(
    tmp_path, fake_openai
) -> None:
    child = tmp_path / "child.pid"
    ws = _with_hooks(
        workspace(tmp_path),
        "[[hooks.pre_tool]]\n"
        f"command = '''trap '' TERM; (trap '' TERM; sleep 300) & echo $! > {child}; "
        "sleep 300'''\n"
        "timeout_s = 1\n",
    )
    fake_openai.enqueue(Reply(calls=[Call("bash", {"command": "touch ran"})]), Reply("ok"))
    try:
        started = time.monotonic()
        result = run_against(
            fake_openai, ws, tmp_path, "--approval", "full", "--trust-project", "go"
        )

        assert result.returncode == 0, result.stderr
        assert time.monotonic() - started < 60
        (blocked,) = _tool_results(fake_openai)
        assert "timed out" in blocked["content"] and not (ws / "ran").exists()
        assert not process_alive(int(child.read_text()))
    finally:
        if child.exists() and child.read_text().strip():  # a survivor of a failing run
            with contextlib.suppress(ProcessLookupError):
                os.kill(int(child.read_text()), signal.SIGKILL)


def test_a_hook_whose_tools_are_a_glob_guards_every_tool_it_names(tmp_path, fake_openai) -> None:
    # `tools = ["b*"]` (or `mcp__raw__*`) was compared as one literal name: the guard
    # never ran, and nothing said so.
    ws = _with_hooks(
        workspace(tmp_path),
        "[[hooks.pre_tool]]\ncommand = 'echo blocked by the guard >&2; exit 2'\ntools = ['b*']\n",
    )
    fake_openai.enqueue(Reply(calls=[Call("bash", {"command": "touch ran.txt"})]), Reply("ok"))

    result = run_against(fake_openai, ws, tmp_path, "--approval", "full", "--trust-project", "go")

    assert result.returncode == 0, result.stderr[-2000:]
    [blocked] = _tool_results(fake_openai)
    assert "blocked by the guard" in blocked["content"]
    assert not (ws / "ran.txt").exists()


def test_a_hook_reply_that_is_not_one_json_object_is_warned_of(tmp_path, fake_openai) -> None:
    # A guard that logged a line before its JSON, or lost a brace, did nothing, unseen.
    ws = _with_hooks(
        workspace(tmp_path),
        "[[hooks.pre_tool]]\n"
        """command = '''echo checking...; echo '{"arguments": {"command": "echo NEW"}}' '''\n"""
        "[[hooks.post_tool]]\n"
        """command = '''echo '{"content": "REPLACED"' '''\n""",
    )
    fake_openai.enqueue(Reply(calls=[Call("bash", {"command": "echo orig"})]), Reply("ok"))

    result = run_against(fake_openai, ws, tmp_path, "--approval", "full", "--trust-project", "go")

    assert result.returncode == 0, result.stderr[-2000:]
    [told] = _tool_results(fake_openai)
    assert told["content"].startswith("orig")
    warned = [line for line in result.stderr.splitlines() if "one JSON object" in line]
    assert len(warned) == 2, result.stderr
    assert "the call went on as the model made it" in warned[0]
    assert "the bash result went to the model as it was" in warned[1]


def test_the_model_cannot_change_a_script_a_hook_runs(tmp_path, fake_openai) -> None:
    # Hooks run on the host, outside the sandbox: the model edited the script a pre_tool
    # hook runs, and its next bash call ran the edit on this machine.
    ws = workspace(tmp_path)
    (ws / "scripts").mkdir()
    (ws / "scripts" / "check.sh").write_text("exit 0\n")
    escaped = tmp_path / "escaped"
    user = tmp_path / "user.toml"
    user.write_text('[[hooks.pre_tool]]\ncommand = "bash scripts/check.sh"\ntools = ["bash"]\n')
    edit = Call("edit", {"path": "scripts/check.sh", "old_string": "exit 0\n",
                         "new_string": f"touch {escaped}\nexit 0\n"})  # fmt: skip
    fake_openai.enqueue(
        Reply(calls=[edit]), Reply(calls=[Call("bash", {"command": "echo hi"})]), Reply("ok")
    )

    result = run_against(fake_openai, ws, tmp_path, "go", env_extra={"LATHE_CONFIG": str(user)})

    assert result.returncode == 0, result.stderr[-2000:]
    assert (ws / "scripts" / "check.sh").read_text() == "exit 0\n"
    assert not escaped.exists()
