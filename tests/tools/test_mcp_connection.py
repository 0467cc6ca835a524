"""One server connection shared by parallel calls: a late failure of a call made on an
earlier start of the server must not end the server started since."""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path

import pytest

from lathe.config.schema import McpServerConfig
from lathe.mcptools.connection import McpConnection, McpFailure
from lathe.mcptools.servers import ServerEntry

FAKE_SERVER = str(Path(__file__).resolve().parents[1] / "fakes" / "mcp_server.py")


def test_a_late_failure_leaves_the_restarted_server_running(tmp_path):
    config = McpServerConfig(command=sys.executable, args=[FAKE_SERVER])
    connection = McpConnection(ServerEntry("srv", config, "test", False), tmp_path, None)

    async def scenario() -> None:
        try:
            await connection.call_tool("echo", {"text": "a"})
            first = connection._task
            await connection._end_task()  # a parallel call failed and dropped it
            await connection.call_tool("echo", {"text": "b"})  # a third call restarted it
            with pytest.raises(McpFailure, match="late failure"):
                await connection._drop("late failure", first)  # the first start's call
            assert connection.running
            assert (await connection.call_tool("echo", {"text": "c"})).content[0].text == "echo: c"
            assert connection.starts == 2
        finally:
            await connection.aclose()

    asyncio.run(scenario())
