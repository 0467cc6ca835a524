"""Capping text a tool already holds (an MCP result, a skill's file) the way command
output is capped: whole when it fits `ToolContext.limits.output_max_bytes`, else the head
and the tail with the whole in the spill folder, and a note saying how to page it."""

from __future__ import annotations

import shlex

from lathe.tools.base import ToolContext, ToolOutput


def capped(text: str, ctx: ToolContext, *, is_error: bool = False, summary: str = "") -> ToolOutput:
    """`text` within the tool output cap, the whole in the spill folder when cut."""
    from lathe.exec.output import cap_output
    from lathe.tools.bash import NOTES_ROOM, paging_notice

    data = text.encode("utf-8")
    limit = ctx.limits.output_max_bytes
    if len(data) <= limit:
        return ToolOutput(content=text, is_error=is_error, summary=summary)
    kept, spill = cap_output(data, max(limit - NOTES_ROOM, 0), ctx.spill_dir)
    return ToolOutput(
        content=f"{kept}\n{paging_notice(kept, spill)}",
        is_error=is_error,
        summary=summary,
        details={"truncated": True, "full_output_path": str(spill) if spill else None},
    )


def line_part(path: str, number: int, first: int, count: int = 4000) -> str:
    """A bash command printing `count` bytes of line `number` of the file `path` (as
    shown, from the workspace root) from byte `first`: read shows a line only to its
    2,000th character and grep only around a match, so a notice about a longer line
    names this."""
    return f"sed -n '{number}p' {shlex.quote(path)} | cut -b {first}-{first + count - 1}"
