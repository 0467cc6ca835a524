"""The loop asks each tool what it is; it never checks a tool's name."""

from __future__ import annotations

from pathlib import Path
from typing import Any, ClassVar

from lathe.agent.loop import Agent, AgentDeps
from lathe.exec.local import LocalExecutor
from lathe.hooks.base import AgentHooks
from lathe.llm.scripted import ScriptedProvider, reply
from lathe.tools.base import Params, Tool, ToolContext, ToolOutput, ToolRegistry
from lathe.types import ToolResultMessage


class ShellParams(Params):
    line: str


class Shell(Tool):
    """A shell tool that is not called bash; says which command each call runs."""

    name: ClassVar[str] = "sh"
    description: ClassVar[str] = "run a line"
    parameters: ClassVar[type[Params]] = ShellParams
    repeatable: ClassVar[bool] = True

    async def execute(self, args: ShellParams, ctx: ToolContext) -> ToolOutput:
        return ToolOutput(content="ran\n[exit code: 0]", details={"exit_code": 0})

    def shell_command(self, arguments: dict[str, Any]) -> str | None:
        return str(arguments.get("line", ""))


class Plain(Tool):
    """Changes files and declares nothing beyond what every tool must."""

    name: ClassVar[str] = "plain"
    description: ClassVar[str] = "change a file"
    parameters: ClassVar[type[Params]] = ShellParams

    async def execute(self, args: ShellParams, ctx: ToolContext) -> ToolOutput:
        return ToolOutput(content="changed")


class RefuseAll(AgentHooks):
    async def before_tool(self, name: str, arguments: dict[str, Any]) -> ToolOutput:
        return ToolOutput(content="Denied: no.", is_error=True)


def agent(tmp_path: Path, provider: ScriptedProvider, hooks: AgentHooks | None = None) -> Agent:
    context = ToolContext(tmp_path, LocalExecutor(), tmp_path / ".spill", None)
    deps = AgentDeps(
        provider=provider,
        tools=ToolRegistry([Shell(), Plain()]),
        tool_context=context,
        system_prompt="test",
        hooks=hooks or AgentHooks(),
    )
    return Agent(deps, lambda event: None)


async def test_evidence_comes_from_any_tool_that_runs_a_shell_command(tmp_path) -> None:
    provider = ScriptedProvider(
        [reply("", ("plain", {"line": "x"})), reply("", ("sh", {"line": "pytest -q"})),
         reply("done")]
    )  # fmt: skip

    finished = await agent(tmp_path, provider).run("task")

    assert finished.evidence is not None
    assert (finished.evidence.command, finished.evidence.exit_code) == ("pytest -q", 0)


async def test_a_refused_tool_without_a_hint_gets_the_refusal_alone(tmp_path) -> None:
    provider = ScriptedProvider([reply("", ("plain", {"line": "x"})), reply("done")])

    await agent(tmp_path, provider, RefuseAll()).run("task")

    result = next(m for m in provider.requests[1].messages if isinstance(m, ToolResultMessage))
    assert (result.content, result.is_error) == ("Denied: no.", True)
