"""End to end: when a server's tools are deferred behind `tool_search`, its description
lists them within the share of the window MCP schemas may take (`mcp.schema_share`),
and a first request that does not fit counts that listing among what the system prompt
and tool definitions cost."""

from __future__ import annotations

import json
import re

from tests.e2e.test_mcp import run, stdio_server, tool_results, user_config, workspace
from tests.fakes.openai_server import Call, Reply, context_too_long


def _window(tokens: int) -> list[str]:
    return ["-c", "models.m.provider=openai", "-c", f"models.m.context_window={tokens}"]


def _search_description(body: dict) -> str:
    [search] = [t for t in body["tools"] if t["function"]["name"] == "tool_search"]
    return search["function"]["description"]


def test_the_listing_of_many_deferred_tools_stays_within_the_schema_share(tmp_path, fake_openai):
    # 3,000 tools made a 466 KB description (about 155k tokens, past gpt-4o's window),
    # where the deferral is there to keep them within a tenth of it.
    ws = workspace(tmp_path)
    user_config(tmp_path, {"many": stdio_server(tmp_path, "--many", "300")})
    fake_openai.enqueue(
        Reply(calls=[Call("tool_search", {"query": "tool_299"})]),
        Reply(calls=[Call("mcp__many__tool_299", {"query": "owners"})]),
        Reply("Found it."),
    )

    result = run(fake_openai, tmp_path, ws, *_window(10_000))

    assert result.returncode == 0, result.stderr
    bodies = fake_openai.chat_bodies()
    description = _search_description(bodies[0])
    assert len(description.encode()) <= 10_000 // 10 * 3  # mcp.schema_share, 3 bytes a token
    shown = re.findall(r"^mcp__many__\w+$", description, re.MULTILINE)
    numbered = [name for name in shown if name.startswith("mcp__many__tool_")]
    assert numbered == [f"mcp__many__tool_{n}" for n in range(len(numbered))] and numbered
    assert f"The first {len(shown)} of 308 tools" in description  # 8 besides the 300
    assert description.endswith(f"\n… and {308 - len(shown)} more")
    assert json.loads(tool_results(bodies[1])[0])[0]["name"] == "mcp__many__tool_299"
    assert tool_results(bodies[2])[-1] == "tool_299 answered 'owners' (limit 10)"


def test_a_first_request_too_long_counts_the_tool_listing_as_tool_definitions(
    tmp_path, fake_openai
):
    # Only each spec's parameters were counted: the error said the system prompt and
    # tool definitions were about 1,971 tokens of a request the tool listing filled,
    # and advised a smaller task message.
    ws = workspace(tmp_path)
    user_config(tmp_path, {"many": stdio_server(tmp_path, "--many", "300")})
    fake_openai.responder = lambda body: context_too_long()

    result = run(fake_openai, tmp_path, ws, *_window(200_000))

    assert result.returncode != 0
    listing = _search_description(fake_openai.chat_bodies()[0])
    said = re.search(r"system prompt and tool definitions are about ([\d,]+)", result.stderr)
    assert said, result.stderr
    assert int(said.group(1).replace(",", "")) >= len(listing.encode()) // 3, result.stderr
    # The advice was "a smaller task message" for a task of three words.
    assert "the MCP servers' tool definitions (many) about" in result.stderr
    assert "include_tools" in result.stderr and "smaller task message" not in result.stderr
