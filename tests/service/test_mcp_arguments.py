"""`lathe mcp serve` and arguments a tool does not take: a missing one was a pydantic
dump over several lines (with a link to pydantic's site), and an unknown one was
silently accepted."""

from __future__ import annotations

import asyncio
import os
import sys


def _calls(tmp_path, calls: list[tuple[str, dict]]) -> list:
    """The results of `calls` made in turn to `lathe mcp serve` through the SDK's client."""
    from mcp import Client, StdioServerParameters
    from mcp.client.stdio import stdio_client

    env = {k: v for k, v in os.environ.items() if not k.startswith(("LATHE_", "OPENAI_"))}
    env.update(LATHE_HOME=str(tmp_path / "home"), OPENAI_API_KEY="sk-test")
    params = StdioServerParameters(
        command=sys.executable, args=["-m", "lathe", "mcp", "serve"], env=env, cwd=tmp_path
    )

    async def session() -> list:
        with open(tmp_path / "stderr.log", "w") as errlog:
            async with Client(
                stdio_client(params, errlog=errlog), read_timeout_seconds=60
            ) as client:
                return [await client.call_tool(name, arguments) for name, arguments in calls]

    return asyncio.run(session())


def _said(result) -> str:
    assert result.is_error, result
    [content] = result.content
    return content.text


def test_a_missing_wrong_or_unknown_argument_is_refused_in_one_line_naming_it(tmp_path):
    ws = tmp_path / "ws"
    ws.mkdir()
    missing, wrong, unknown, listed = _calls(
        tmp_path,
        [
            ("run_task", {"workspace": str(ws)}),
            ("run_task", {"workspace": str(ws), "task": "x", "approval": "ask"}),
            ("run_task", {"workspace": str(ws), "task": "x", "bogus": 1}),
            ("list_sessions", {"bogus": 1, "limit": 3}),
        ],
    )
    said = _said(missing)
    assert said == "run_task: `task` is required: what to do, in words", said
    said = _said(wrong)
    assert len(said.splitlines()) == 1 and "pydantic" not in said, said
    assert said.startswith("run_task: `approval`: ") and "'ask'" in said, said
    said = _said(unknown)
    assert len(said.splitlines()) == 1, said
    assert said.startswith("run_task: unknown argument `bogus`: it takes workspace, task,"), said
    said = _said(listed)
    assert said.startswith("list_sessions: unknown argument `bogus`"), said
    # A refused call started nothing.
    assert not list((tmp_path / "home" / "sessions").rglob("*.jsonl"))
