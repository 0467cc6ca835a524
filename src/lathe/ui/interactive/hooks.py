"""Agent hooks the interactive face adds to the ones every face gets."""

from __future__ import annotations

import dataclasses
from typing import Any

from lathe.hooks.base import AgentHooks
from lathe.tools.base import ToolOutput, ToolRegistry

_TAIL_LINES = 40
_TAIL_CHARS = 4_000


class OutputTap(AgentHooks):
    """Copies the last lines of a command's output into `details["output_tail"]`, so the
    ToolFinished event the terminal renders can show them (the event carries no output
    of its own). A command is a call whose tool names one (`Tool.shell_command`). What
    the model receives is unchanged."""

    def __init__(self, tools: ToolRegistry) -> None:
        self._tools = tools

    async def after_tool(
        self, name: str, arguments: dict[str, Any], output: ToolOutput
    ) -> ToolOutput:
        tool = self._tools.get(name)
        if tool is None or tool.shell_command(arguments) is None:
            return output
        if "output_tail" in output.details:
            return output
        body = output.content
        # The bash tool appends bracketed notes ("[exit code: 0]"); they are shown apart.
        lines = [line for line in body.splitlines() if not line.startswith("[exit code:")]
        tail = "\n".join(lines[-_TAIL_LINES:])[-_TAIL_CHARS:]
        return dataclasses.replace(output, details={**output.details, "output_tail": tail})
