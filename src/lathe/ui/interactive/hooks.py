"""Agent hooks the interactive face adds to the ones every face gets."""

from __future__ import annotations

import dataclasses
from typing import Any

from lathe.hooks.base import AgentHooks
from lathe.tools.base import ToolOutput

_TAIL_LINES = 40
_TAIL_CHARS = 4_000


class OutputTap(AgentHooks):
    """Copies the last lines of a command's output into `details["output_tail"]`, so the
    ToolFinished event the terminal renders can show them (the event carries no output
    of its own). What the model receives is unchanged."""

    async def after_tool(
        self, name: str, arguments: dict[str, Any], output: ToolOutput
    ) -> ToolOutput:
        if name != "bash" or "output_tail" in output.details:
            return output
        body = output.content
        # The bash tool appends bracketed notes ("[exit code: 0]"); they are shown apart.
        lines = [line for line in body.splitlines() if not line.startswith("[exit code:")]
        tail = "\n".join(lines[-_TAIL_LINES:])[-_TAIL_CHARS:]
        return dataclasses.replace(output, details={**output.details, "output_tail": tail})
