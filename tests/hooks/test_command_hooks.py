"""Config command hooks on a real loop with the real bash tool and the policy gate."""

from __future__ import annotations

import json
from pathlib import Path

from lathe.agent.hooks import HookChain
from lathe.agent.loop import Agent, AgentDeps
from lathe.config.schema import HookCommand, HooksConfig
from lathe.exec.local import LocalExecutor
from lathe.hooks.command import CommandHooks
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
        "python3 -c 'import json,sys; a=json.load(sys.stdin)[\"arguments\"]; "
        'a["command"]=a["command"].replace("hello","rewritten"); '
        "print(json.dumps({\"arguments\": a}))'"
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
