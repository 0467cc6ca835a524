"""JSON-schema action mode (`tool_mode = "json_schema"`) kept no stop reason of the reply
it parsed: one cut by the output limit came out `end` with half a JSON action as its
text (taken as the final answer: no `CutOffReply`), and a tool call the server could not
parse (a 500) came out an empty `end` reply instead of `unreadable`."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from tests.fakes.openai_server import ErrorReply, Reply

from lathe.agent.loop import Agent, AgentDeps
from lathe.exec.local import LocalExecutor
from lathe.llm.base import Completed, ModelRequest
from lathe.llm.registry import Endpoint, make_provider
from lathe.tools.base import ToolContext, ToolRegistry
from lathe.tools.builtin import builtin_tools
from lathe.types import AssistantMessage, StopReason, ToolSpec, UserMessage

EDIT = ToolSpec(
    name="edit",
    description="Edit a file",
    parameters={"type": "object", "properties": {"path": {"type": "string"}}},
)
PARSE_ERROR = "Failed to parse tool call arguments as JSON: parse error at line 1"


def _provider(server):
    endpoint = Endpoint(
        kind="openai-compatible", model_id="m", base_url=server.base_url, api_key="sk-test",
        api_key_env="OPENAI_API_KEY", tool_mode="json_schema",
    )  # fmt: skip
    return make_provider(endpoint)


async def _reply(server, item) -> AssistantMessage:
    server.enqueue(item)
    provider = _provider(server)
    request = ModelRequest(system="sys", messages=[UserMessage(content="hi")], tools=[EDIT])
    try:
        events = [event async for event in provider.stream(request)]
    finally:
        await provider.aclose()
    (completed,) = [event for event in events if isinstance(event, Completed)]
    return completed.message


async def test_an_action_cut_by_the_output_limit_is_a_cut_call(fake_openai):
    cut = '{"tool": "edit", "arguments": {"path": "calc.py", "old_str'
    reply = await _reply(fake_openai, Reply(cut, finish_reason="length"))
    assert reply.stop_reason is StopReason.MAX_TOKENS
    assert [call.name for call in reply.tool_calls] == ["edit"]  # CutOffReply runs none


async def test_a_finish_cut_by_the_output_limit_keeps_what_it_said(fake_openai):
    cut = '{"tool": "finish", "message": "partial answer cut'
    reply = await _reply(fake_openai, Reply(cut, finish_reason="length"))
    assert reply.stop_reason is StopReason.MAX_TOKENS
    assert reply.text == "partial answer cut" and not reply.tool_calls


async def test_a_call_the_server_could_not_parse_is_unreadable(fake_openai):
    reply = await _reply(fake_openai, ErrorReply(500, PARSE_ERROR, "server_error"))
    assert reply.stop_reason is StopReason.UNREADABLE


async def test_a_filtered_reply_stays_filtered(fake_openai):
    text = '{"tool": "finish", "message": "done"}'
    reply = await _reply(fake_openai, Reply(text, finish_reason="content_filter"))
    assert reply.stop_reason is StopReason.CONTENT_FILTER


@pytest.mark.parametrize(
    "text",
    ['{"tool": "ed', '{"tool": "nope", "arguments": {"pa', "not json at all"],
)
async def test_a_cut_reply_naming_no_tool_stays_cut_text(fake_openai, text):
    reply = await _reply(fake_openai, Reply(text, finish_reason="length"))
    assert reply.stop_reason is StopReason.MAX_TOKENS and not reply.tool_calls


async def test_a_run_whose_action_is_cut_is_not_taken_as_done(tmp_path: Path, fake_openai):
    (tmp_path / "calc.py").write_text("def add(a, b):\n    return a - b\n")
    fix = {"path": "calc.py", "old_string": "a - b", "new_string": "a + b"}
    whole = json.dumps({"tool": "edit", "arguments": fix})
    fake_openai.enqueue(
        Reply(whole[: whole.index('"new_string')], finish_reason="length"),
        Reply(whole),
        Reply(json.dumps({"tool": "finish", "message": "add adds"})),
    )
    provider = _provider(fake_openai)
    deps = AgentDeps(
        provider=provider,
        tools=ToolRegistry(builtin_tools()),
        tool_context=ToolContext(tmp_path, LocalExecutor(), tmp_path / ".spill", None),
        system_prompt="You fix code.",
    )
    finished = await Agent(deps, lambda event: None).run("fix add")
    await provider.aclose()
    assert finished.answer == "add adds"
    assert (tmp_path / "calc.py").read_text() == "def add(a, b):\n    return a + b\n"
    told = fake_openai.chat_bodies()[1]["messages"][-1]["content"]
    assert "cut off by the output token limit" in told
