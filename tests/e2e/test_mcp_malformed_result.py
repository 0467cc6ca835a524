"""End to end: a tool call whose result the protocol does not allow (`"result": null`,
content of an unknown type) is an error result at once naming the server and the tool,
and the server keeps running for the next call (tests/fakes/mcp_bad_results.py speaks
JSON-RPC without the SDK, which never sends such results)."""

from __future__ import annotations

import sys
from pathlib import Path

from tests.e2e.test_mcp import run, tool_results, user_config, workspace
from tests.fakes.openai_server import Call, Reply

BAD_SERVER = str(Path(__file__).resolve().parents[1] / "fakes" / "mcp_bad_results.py")


def test_a_malformed_result_fails_the_call_at_once_and_keeps_the_server(tmp_path, fake_openai):
    # `"result": null` made the call wait out tool_timeout_s ("did not answer within
    # 20 s"); unknown content failed with "ValidationError ...; the next call starts it
    # again", dropping the connection and spending a restart.
    ws = workspace(tmp_path)
    starts = tmp_path / "starts.txt"
    user_config(
        tmp_path, {"bad": {"command": sys.executable, "args": [BAD_SERVER, str(starts)],
                           "tool_timeout_s": 20}},
    )  # fmt: skip
    fake_openai.enqueue(
        Reply(calls=[Call("mcp__bad__nullresult", {})]),
        Reply(calls=[Call("mcp__bad__weirdcontent", {})]),
        Reply(calls=[Call("mcp__bad__echo", {"text": "still here"})]),
        Reply("Done."),
    )

    result = run(fake_openai, tmp_path, ws)

    assert result.returncode == 0, result.stderr
    bodies = fake_openai.chat_bodies()
    [null] = tool_results(bodies[1])
    assert null.startswith("Error: MCP server bad sent a malformed result for nullresult: "), null
    assert "result" in null and "next call" not in null, null
    weird = tool_results(bodies[2])[-1]
    assert weird.startswith("Error: MCP server bad sent a malformed result for weirdcontent: ")
    assert "content" in weird and "next call" not in weird and "\n" not in weird, weird
    assert tool_results(bodies[3])[-1] == "echo: still here"
    assert len(starts.read_text().splitlines()) == 1  # one start: never dropped
