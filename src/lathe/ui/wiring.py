"""Assembling an Agent from its parts; shared by every face."""

from __future__ import annotations

from pathlib import Path

from lathe.agent.hooks import AgentHooks
from lathe.agent.loop import Agent, AgentDeps, AgentSettings, Emit
from lathe.agent.prompt import system_prompt
from lathe.exec.base import Executor
from lathe.llm.base import Provider
from lathe.tools.base import ToolContext, ToolRegistry


def spill_dir(workspace: Path) -> Path:
    """Where full tool outputs go: inside the workspace so the model can page them with
    `read`, and git-ignored so they never end up in the user's commits."""
    path = workspace / ".lathe" / "tmp"
    path.mkdir(parents=True, exist_ok=True)
    ignore = path / ".gitignore"
    if not ignore.exists():
        ignore.write_text("*\n")
    return path


def build_agent(
    provider: Provider,
    workspace: Path,
    emit: Emit,
    *,
    max_turns: int | None = None,
    verify: str | None = None,
    executor: Executor | None = None,
    hooks: AgentHooks | None = None,
) -> Agent:
    from lathe.exec.local import LocalExecutor
    from lathe.tools.builtin import builtin_tools
    from lathe.tools.files import FileState

    tools = ToolRegistry(builtin_tools())
    context = ToolContext(
        workspace=workspace,
        executor=executor or LocalExecutor(),
        spill_dir=spill_dir(workspace),
        file_state=FileState(),
    )
    settings = AgentSettings(verify_command=verify)
    if max_turns:
        settings.max_turns = max_turns
    deps = AgentDeps(
        provider=provider,
        tools=tools,
        tool_context=context,
        system_prompt=system_prompt(workspace, tools.names(), verify_command=verify),
        settings=settings,
        hooks=hooks or AgentHooks(),
    )
    return Agent(deps, emit)
