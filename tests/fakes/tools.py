"""Tools for tests that drive the agent loop in-process."""

from __future__ import annotations

from typing import ClassVar

from lathe.tools.base import Params, Tool, ToolContext, ToolOutput


class _Args(Params):
    n: int


class Dump(Tool):
    """A read-only tool printing a 6,000-character log, so a few of its outputs fill a
    small window: what pruning and compaction tests grow a conversation with."""

    name: ClassVar[str] = "dump"
    description: ClassVar[str] = "prints a large log"
    parameters: ClassVar[type[Params]] = _Args
    read_only: ClassVar[bool] = True

    async def execute(self, args: _Args, ctx: ToolContext) -> ToolOutput:
        return ToolOutput(content=f"log {args.n}: " + "x" * 6000)

    def summarize_call(self, args: _Args) -> str:
        return str(args.n)
