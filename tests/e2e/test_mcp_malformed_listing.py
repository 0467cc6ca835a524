"""End to end: a server whose tool list the SDK would refuse — one malformed tool, a
page cursor that never ends, a list that is no list — costs the run what is wrong with
it and no more, and the warning names it (`--raw-tools`: the fake server speaks JSON-RPC
without the SDK, which refuses to send such lists)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from tests.e2e.test_mcp import (
    assert_server_gone,
    lathe,
    received,
    run,
    stdio_server,
    tool_names,
    tool_results,
    user_config,
    workspace,
)
from tests.fakes.openai_server import Call, Reply

ECHO = {
    "name": "echo",
    "description": "Echo the text.",
    "inputSchema": {"type": "object", "properties": {"text": {"type": "string"}}},
}


def _raw_server(tmp_path: Path, tools, *extra: str, **settings) -> dict:
    listed = tmp_path / "tools.json"
    listed.write_text(json.dumps(tools))
    return stdio_server(tmp_path, "--raw-tools", str(listed), *extra, **settings)


def _warnings(stderr: str) -> list[str]:
    return [line for line in stderr.splitlines() if "MCP server raw" in line]


def test_one_malformed_tool_is_left_out_and_named_and_the_others_are_offered(tmp_path, fake_openai):
    # "ValidationError: 1 validation error for ListToolsResult; the next call starts it
    # again; its tools are not offered in this run": one tool's `"required": "a"` cost
    # all eight, and the warning said neither which tool nor what was wrong.
    ws = workspace(tmp_path)
    broken = {"name": "badschema", "inputSchema": {"type": "object", "required": "a"}}
    lookup = {
        "name": "lookup",
        "inputSchema": {"type": "object", "properties": {"q": {"type": "string"}}},
        "annotations": {"readOnlyHint": True},
    }
    user_config(tmp_path, {"raw": _raw_server(tmp_path, [ECHO, broken, lookup])})
    fake_openai.enqueue(
        Reply(calls=[Call("mcp__raw__echo", {"text": "hi"}), Call("mcp__raw__lookup", {"q": "x"})]),
        Reply("Both answered."),
    )

    result = run(fake_openai, tmp_path, ws)

    assert result.returncode == 0, result.stderr
    bodies = fake_openai.chat_bodies()
    offered = [name for name in tool_names(bodies[0]) if name.startswith("mcp__raw__")]
    assert offered == ["mcp__raw__echo", "mcp__raw__lookup"]
    [warning] = _warnings(result.stderr)
    assert "'badschema'" in warning and "inputSchema.required" in warning, warning
    assert "next call" not in warning
    assert tool_results(bodies[1]) == ['echo: {"text": "hi"}', 'lookup: {"q": "x"}']
    assert [call["name"] for call in received(tmp_path)] == ["echo", "lookup"]
    assert_server_gone(tmp_path)


@pytest.mark.parametrize(
    ("flag", "timeout_s", "said"),
    [
        # Every page named the same next page: lathe asked for it until the startup
        # timeout, then said the server "did not answer within 5 s".
        ("--same-cursor", 5, ("same next page", "'again'")),
        # Each page named a new next page and gave the same tools: lathe asked until the
        # startup timeout, then said the server did not answer, and offered none of them.
        ("--new-cursor", 20, ("added no tool",)),
    ],
)
def test_a_listing_that_would_not_end_stops_with_the_tools_it_gave(
    tmp_path, fake_openai, flag, timeout_s, said
):
    ws = workspace(tmp_path)
    server = _raw_server(tmp_path, [ECHO], flag, startup_timeout_s=timeout_s)
    user_config(tmp_path, {"raw": server})
    fake_openai.enqueue(Reply(calls=[Call("mcp__raw__echo", {"text": "hi"})]), Reply("Done."))

    result = run(fake_openai, tmp_path, ws)

    assert result.returncode == 0, result.stderr
    bodies = fake_openai.chat_bodies()
    assert [name for name in tool_names(bodies[0]) if name.startswith("mcp__raw__")] == [
        "mcp__raw__echo"
    ]
    [warning] = _warnings(result.stderr)
    assert all(words in warning for words in said), warning
    assert "did not answer" not in warning
    assert tool_results(bodies[1]) == ['echo: {"text": "hi"}']


def test_a_list_that_is_no_list_is_a_warning_naming_the_field(tmp_path, fake_openai):
    ws = workspace(tmp_path)
    user_config(tmp_path, {"raw": _raw_server(tmp_path, "nope")})
    fake_openai.enqueue(Reply("No tools from it."))

    result = run(fake_openai, tmp_path, ws)

    assert result.returncode == 0, result.stderr
    [warning] = _warnings(result.stderr)
    assert "tools: Input should be a valid list" in warning, warning
    assert "its tools are not offered in this run" in warning
    assert "next call" not in warning  # there is none: the run offers it no tool


def test_mcp_list_and_test_say_which_tool_they_left_out(tmp_path):
    # A run warned of the malformed tool, but `lathe mcp list` and `lathe mcp test`, the
    # commands a user checks a server with, showed the other tools and said nothing.
    ws = workspace(tmp_path)
    broken = {"name": "badschema", "inputSchema": {"type": "object", "required": "a"}}
    user_config(tmp_path, {"raw": _raw_server(tmp_path, [ECHO, broken])})

    for args in (["list", "-C", str(ws)], ["test", "raw", "-C", str(ws)]):
        done = lathe("mcp", *args, tmp_path=tmp_path)
        assert done.returncode == 0, done.stderr
        said = done.stdout + done.stderr
        assert "mcp__raw__echo" in said
        assert "'badschema'" in said and "inputSchema.required" in said, said
