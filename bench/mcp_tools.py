"""MCP figures: what a 200-tool server's schemas cost in a request with and without
deferral, and the time from `lathe run` starting to the first MCP result.

The server is the SDK-built fake (tests/fakes/mcp_server.py --many 200, 207 tools), run
over stdio. The time to the first MCP result is measured through a real `lathe run`
against the scripted fake model, from starting the process to the fake model receiving
the request that holds the tool's result (and, to tell lathe's own start from the
server's, to its first request), twice: cold (no cached tool list: the server
starts at session start to list its tools) and warm (the list comes from the cache
under LATHE_HOME and the server starts at the first call), and warm with --mcp-eager
(listed from the cache, the server started in the background at session start).

Usage: python bench/mcp_tools.py [--runs N]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from tests.fakes.openai_server import Call, FakeOpenAIServer, Reply  # noqa: E402

FAKE_SERVER = str(REPO / "tests" / "fakes" / "mcp_server.py")
WINDOW = 128_000  # the default window of an unknown model; 10 % of it is the share


async def _schema_tokens() -> tuple[int, int, int]:
    from lathe.config.schema import McpServerConfig
    from lathe.mcptools.connection import McpConnection
    from lathe.mcptools.servers import ServerEntry
    from lathe.mcptools.session import remote_tool, schema_tokens
    from lathe.mcptools.tools import McpResourceTool, McpTool, ToolSearchTool

    config = McpServerConfig(command=sys.executable, args=[FAKE_SERVER, "--many", "200"])
    connection = McpConnection(ServerEntry("many", config, "bench", False), REPO, None)
    try:
        tools = [McpTool(connection, remote_tool(t)) for t in await connection.list_tools()]
    finally:
        await connection.aclose()
    deferred = schema_tokens([ToolSearchTool(tools), McpResourceTool({"many": connection})])
    return len(tools), schema_tokens(tools), deferred


def _time_to_first_result(
    home: Path, workspace: Path, config: Path, *flags: str
) -> tuple[float, float]:
    """Seconds from starting `lathe run` to the fake model receiving its first request,
    and to it receiving the request that holds the first MCP result."""
    with FakeOpenAIServer() as model:
        model.enqueue(Reply(calls=[Call("mcp__many__add", {"a": 1, "b": 2})]), Reply("3."))
        env = {k: v for k, v in os.environ.items() if not k.startswith(("LATHE_", "OPENAI_"))}
        env |= {"OPENAI_API_KEY": "sk-bench", "LATHE_HOME": str(home), "LATHE_CONFIG": str(config)}
        started = time.monotonic()
        process = subprocess.Popen(
            [sys.executable, "-m", "lathe", "run", "--model", "m", "--base-url",
             model.base_url, "-C", str(workspace), *flags, "add"],
            env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
        )  # fmt: skip
        marks: list[float] = []
        while len(marks) < 2 and process.poll() is None:
            if len(model.chat_bodies()) > len(marks):
                marks.append(time.monotonic() - started)
            time.sleep(0.005)
        _, stderr = process.communicate(timeout=60)
        result = [m for m in model.chat_bodies()[-1]["messages"] if m["role"] == "tool"]
        if process.returncode != 0 or not result or result[0]["content"] != "3":
            raise SystemExit(f"the run failed: {stderr}")
        return marks[0], marks[1]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    count, full, deferred = asyncio.run(_schema_tokens())
    print(f"tool schemas of a {count}-tool MCP server, at 3 bytes a token:")
    print(f"  without deferral: {full:,} tokens ({full / WINDOW:.0%} of a 128k window)")
    print(f"  with deferral (tool_search + mcp_resource): {deferred:,} tokens")
    cold, warm, eager = [], [], []
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        workspace = root / "ws"
        workspace.mkdir()
        config = root / "config.toml"
        config.write_text(
            f'[mcp.servers.many]\ncommand = "{sys.executable}"\n'
            f'args = ["{FAKE_SERVER}", "--many", "200"]\n'
        )
        for run in range(args.runs):
            home = root / f"home{run}"
            cold.append(_time_to_first_result(home, workspace, config))
            warm.append(_time_to_first_result(home, workspace, config))
            eager.append(_time_to_first_result(home, workspace, config, "--mcp-eager"))
    print(f"time from `lathe run` starting (median of {args.runs}; {_load()}):")
    for label, runs in (
        ("cold, no cached tool list", cold),
        ("warm, tool list cached", warm),
        ("warm with --mcp-eager", eager),
    ):
        first = statistics.median(r[0] for r in runs)
        result = statistics.median(r[1] for r in runs)
        print(f"  {label}: first model request {first:.2f} s, first MCP result {result:.2f} s")
    started = time.monotonic()
    subprocess.run([sys.executable, FAKE_SERVER, "--many", "200"], input="", text=True, check=True)
    print(f"  (the fake server alone, to start and stop: {time.monotonic() - started:.2f} s)")


def _load() -> str:
    one, _, _ = os.getloadavg()
    return f"load average {one:.2f} on {os.cpu_count()} CPUs"


if __name__ == "__main__":
    main()
