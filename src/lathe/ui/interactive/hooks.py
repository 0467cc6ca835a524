"""Agent hooks the interactive face adds to the ones every face gets."""

from __future__ import annotations

import asyncio
import dataclasses
from typing import Any

from lathe.hooks.base import AgentHooks
from lathe.tools.base import ToolOutput, ToolRegistry

_TAIL_LINES = 40
_TAIL_CHARS = 4_000
# The notes the bash tool and the sandbox put below a command's output, one line each.
_NOTES = ("[timeout capped at ", "[killed after ", "[output truncated: ", "[lathe: ")


class OutputTap(AgentHooks):
    """Copies the last lines of a command's output into `details["output_tail"]`, and
    how many lines it wrote in all into `details["output_lines"]`, so the ToolFinished
    event the terminal renders can show them and say how many are above them (counted
    from the tail, `seq 1 1000` said "34 lines above"). A command is a call whose tool
    names one (`Tool.shell_command`). What the model receives is unchanged."""

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
        written = await asyncio.to_thread(_lines_written, output, lines)  # up to 64 MiB read
        counted = {"output_tail": tail, "output_lines": written}
        return dataclasses.replace(output, details={**output.details, **counted})


def _lines_written(output: ToolOutput, lines: list[str]) -> int:
    """How many lines `lines` (the result's, as the tail is cut from them) stand for:
    themselves, or, when the output was cut (its middle left out), the whole output the
    executor kept in its spill file, with the tool's notes below it ("[output truncated:
    ...]", one line each)."""
    spilled = output.details.get("full_output_path")
    if not (output.details.get("truncated") and spilled):
        return len(lines)
    notes = next((i for i, line in enumerate(reversed(lines)) if not line.startswith(_NOTES)), 0)
    try:
        with open(spilled, "rb") as whole:
            count, last = 0, b"\n"
            while chunk := whole.read(1 << 20):
                count, last = count + chunk.count(b"\n"), chunk[-1:]
    except OSError:  # gone or unreadable: the lines the model got are all there is to count
        return len(lines)
    return count + (last != b"\n") + notes
