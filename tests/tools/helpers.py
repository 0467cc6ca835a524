"""Helpers for tool tests: call a tool as the loop would, and capture what it changed."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from lathe.errors import ToolError
from lathe.tools.base import Tool, ToolContext, ToolOutput


async def call(tool: Tool, ctx: ToolContext, **arguments: Any) -> ToolOutput:
    """Validate arguments as the loop does, then run the tool."""
    return await tool.execute(tool.parameters.model_validate(arguments), ctx)


async def call_error(tool: Tool, ctx: ToolContext, **arguments: Any) -> str:
    """The error text the model would see; fails the test when the call succeeds."""
    try:
        out = await call(tool, ctx, **arguments)
    except ToolError as exc:
        return str(exc)
    assert out.is_error, f"expected an error, got: {out.content}"
    return out.content


def snapshot(root: Path) -> dict[str, bytes]:
    """Every file under root with its bytes, to prove nothing changed."""
    return {
        str(p.relative_to(root)): p.read_bytes()
        for p in sorted(root.rglob("*"))
        if p.is_file() and not p.is_symlink()
    }


def process_alive(pid: int) -> bool:
    """False once the process is gone or a zombie (pid 1 here may never reap orphans)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except (FileNotFoundError, ProcessLookupError):
        return False
    state = stat.rsplit(")", 1)[1].split()[0]
    return state not in ("Z", "X")


def set_mtime(path: Path, seconds_ago: float) -> None:
    stamp = path.stat().st_mtime - seconds_ago
    os.utime(path, (stamp, stamp))
