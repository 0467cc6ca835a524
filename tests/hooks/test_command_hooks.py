"""Config command hooks on a real loop with the real bash tool and the policy gate."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import signal
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from tests.tools.helpers import process_alive

from lathe.agent.loop import Agent, AgentDeps
from lathe.config.schema import HookCommand, HooksConfig
from lathe.exec.local import LocalExecutor
from lathe.hooks.base import HookChain
from lathe.hooks.command import CommandHooks, run_hook
from lathe.llm.scripted import ScriptedProvider, reply
from lathe.policy.gate import Mode, Policy, PolicyGate
from lathe.policy.rules import RuleSet
from lathe.tools.base import ToolContext, ToolRegistry
from lathe.tools.builtin import builtin_tools
from lathe.types import ToolResultMessage


async def run_with_hooks(tmp_path: Path, hooks: HooksConfig, command: str) -> ToolResultMessage:
    provider = ScriptedProvider([reply("", ("bash", {"command": command})), reply("done")])
    gate = PolicyGate(Policy(Mode.AUTO, RuleSet(), tmp_path, Path.home(), sandboxed=True))
    deps = AgentDeps(
        provider=provider,
        tools=ToolRegistry(builtin_tools()),
        tool_context=ToolContext(tmp_path, LocalExecutor(), tmp_path / ".spill", None),
        system_prompt="test",
        hooks=HookChain([gate, CommandHooks(hooks, tmp_path)]),
    )
    await Agent(deps, lambda event: None).run("task")
    return next(m for m in provider.requests[1].messages if isinstance(m, ToolResultMessage))


async def test_pre_tool_exit_2_blocks_with_stderr_as_the_reason(tmp_path):
    hooks = HooksConfig(
        pre_tool=[HookCommand(command="echo 'no network calls here' >&2; exit 2", tools=["bash"])]
    )
    result = await run_with_hooks(tmp_path, hooks, "touch made.txt")
    assert result.is_error and "no network calls here" in result.content
    assert not (tmp_path / "made.txt").exists()


async def test_pre_tool_json_rewrites_the_arguments(tmp_path):
    script = (
        'python3 -c \'import json,sys; a=json.load(sys.stdin)["arguments"]; '
        'a["command"]=a["command"].replace("hello","rewritten"); '
        'print(json.dumps({"arguments": a}))\''
    )
    hooks = HooksConfig(pre_tool=[HookCommand(command=script)])
    result = await run_with_hooks(tmp_path, hooks, "echo hello")
    assert "rewritten" in result.content and "hello" not in result.content


async def test_a_rewrite_is_judged_again_by_the_policy_gate(tmp_path):
    evil = json.dumps({"arguments": {"command": "rm -rf /"}})
    hooks = HooksConfig(pre_tool=[HookCommand(command=f"echo '{evil}'")])
    result = await run_with_hooks(tmp_path, hooks, "echo harmless")
    assert result.is_error and "blocked" in result.content


async def test_post_tool_json_replaces_the_result(tmp_path):
    hooks = HooksConfig(post_tool=[HookCommand(command='echo \'{"content": "[redacted]"}\'')])
    result = await run_with_hooks(tmp_path, hooks, "echo secret-value")
    assert result.content == "[redacted]"


async def test_a_pre_tool_hook_that_times_out_blocks_the_call(tmp_path):
    hooks = HooksConfig(pre_tool=[HookCommand(command="sleep 30", timeout_s=0.5)])
    result = await run_with_hooks(tmp_path, hooks, "touch made.txt")
    assert result.is_error and "timed out" in result.content
    assert not (tmp_path / "made.txt").exists()


async def test_session_start_and_stop_hooks_see_the_event(tmp_path):
    hooks = HooksConfig(
        session_start=[HookCommand(command="cat > start.json")],
        stop=[HookCommand(command="cat > stop.json")],
    )
    await run_with_hooks(tmp_path, hooks, "true")
    assert json.loads((tmp_path / "start.json").read_text())["task"] == "task"
    assert json.loads((tmp_path / "stop.json").read_text())["status"] == "unverified"


def _in_own_session(pid_file: Path) -> str:
    """A grandchild in a session of its own, off the hook's pipes, that records its pid."""
    return f"setsid bash -c 'echo $$ > {pid_file}; exec sleep 300' > /dev/null 2>&1 &"


def _until_written(pid_file: Path) -> str:
    return f"while [ ! -s {pid_file} ]; do sleep 0.01; done"


@pytest.fixture
def pid_file(tmp_path: Path) -> Iterator[Path]:
    path = tmp_path / "pid"
    yield path
    if path.exists() and path.read_text().strip():  # a survivor from a failing test
        with contextlib.suppress(ProcessLookupError):
            os.kill(int(path.read_text()), signal.SIGKILL)


async def test_a_hook_that_times_out_leaves_nothing_behind(tmp_path, pid_file):
    hook = HookCommand(command=f"{_in_own_session(pid_file)} sleep 30", timeout_s=1)
    result = await run_hook(hook, {"event": "pre_tool"}, tmp_path)
    assert result.exit_code is None and "timed out after 1.0s" in result.stderr
    assert not process_alive(int(pid_file.read_text()))


async def test_what_a_hook_leaves_running_stops_when_it_ends(tmp_path, pid_file):
    holder = tmp_path / "holder.pid"
    command = f"{_in_own_session(pid_file)} {_until_written(pid_file)}; "
    command += f"sleep 300 & echo $! > {holder}; echo '{{}}'"
    started = time.monotonic()
    result = await run_hook(HookCommand(command=command, timeout_s=20), {}, tmp_path)
    assert time.monotonic() - started < 10  # the sleep holding stdout did not keep it waiting
    assert (result.exit_code, result.stdout) == (0, "{}\n")
    assert not process_alive(int(pid_file.read_text()))
    assert not process_alive(int(holder.read_text()))


async def test_a_cancelled_hook_leaves_nothing_behind(tmp_path, pid_file):
    hook = HookCommand(command=f"{_in_own_session(pid_file)} sleep 30", timeout_s=60)
    task = asyncio.create_task(run_hook(hook, {}, tmp_path))
    while not (pid_file.exists() and pid_file.read_text().strip()):
        await asyncio.sleep(0.02)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    deadline = time.monotonic() + 10  # it dies at once; a busy machine may take seconds
    while process_alive(int(pid_file.read_text())):
        assert time.monotonic() < deadline, "the cancelled hook's grandchild survived"
        await asyncio.sleep(0.05)
