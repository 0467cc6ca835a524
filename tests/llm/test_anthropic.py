"""AnthropicProvider against the fake Messages API server over real HTTP: what it reads
from the stream, and what it sends (asserted on the request the server received)."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest
from tests.fakes.anthropic_server import (
    FakeAnthropicServer,
    RedactedThinking,
    Reply,
    ThinkingBlock,
    ToolUse,
)
from tests.llm.provider_support import QUICK, SECRET, failure, run

from lathe.errors import BadRequest
from lathe.llm.anthropic import AnthropicProvider
from lathe.llm.base import ModelRequest, TextDelta, ThinkingDelta
from lathe.types import (
    AssistantMessage,
    StopReason,
    Thinking,
    ToolCall,
    ToolResultMessage,
    ToolSpec,
    Usage,
    UserMessage,
)

CACHE = {"type": "ephemeral"}
READ = ToolSpec(name="read", description="read a file", parameters={"type": "object"})
GREP = ToolSpec(name="grep", description="search", parameters={"type": "object"})


@pytest.fixture
async def claude(fake_anthropic: FakeAnthropicServer) -> AsyncIterator[AnthropicProvider]:
    p = AnthropicProvider("fake-claude", fake_anthropic.base_url, SECRET, timeouts=QUICK)
    yield p
    await p.aclose()


def ask(*messages, tools=(), system="You are terse.", **options) -> ModelRequest:
    return ModelRequest(system=system, messages=list(messages), tools=list(tools), **options)


# reading the stream


async def test_streams_text_deltas_and_completes_with_the_whole_reply(fake_anthropic, claude):
    fake_anthropic.enqueue(Reply("Hello there, friend", text_chunk=5))

    deltas, message = await run(claude, ask(UserMessage(content="hi")))

    assert deltas == [TextDelta("Hello"), TextDelta(" ther"), TextDelta("e, fr"), TextDelta("iend")]
    assert message == AssistantMessage(
        text="Hello there, friend",
        stop_reason=StopReason.END,
        usage=Usage(input_tokens=25, output_tokens=9),
        model="fake-claude",
    )


async def test_tool_use_input_is_assembled_from_json_deltas(fake_anthropic, claude):
    fake_anthropic.enqueue(
        Reply(
            "Let me look.",
            calls=[
                ToolUse("read", {"path": "src/app.py", "limit": 40}, id="toolu_a"),
                ToolUse("grep", {"pattern": "def main"}, id="toolu_b"),
            ],
            args_chunk=3,
        )
    )

    _, message = await run(claude, ask(UserMessage(content="look"), tools=[READ, GREP]))

    assert message.text == "Let me look."
    assert message.tool_calls == (
        ToolCall(id="toolu_a", name="read", arguments='{"path": "src/app.py", "limit": 40}'),
        ToolCall(id="toolu_b", name="grep", arguments='{"pattern": "def main"}'),
    )
    assert message.stop_reason is StopReason.TOOL_USE


async def test_malformed_tool_input_is_returned_verbatim_for_the_loop_to_repair(
    fake_anthropic, claude
):
    fake_anthropic.enqueue(Reply(calls=[ToolUse("grep", '{"pattern": "x"', id="toolu_m")]))

    _, message = await run(claude, ask(UserMessage(content="go"), tools=[GREP]))

    assert message.tool_calls == (ToolCall(id="toolu_m", name="grep", arguments='{"pattern": "x"'),)


async def test_a_tool_use_without_input_deltas_has_empty_object_arguments(fake_anthropic, claude):
    fake_anthropic.enqueue(Reply(calls=[ToolUse("ls", "", id="toolu_e")]))

    _, message = await run(claude, ask(UserMessage(content="go")))

    assert message.tool_calls == (ToolCall(id="toolu_e", name="ls", arguments="{}"),)


async def test_thinking_is_streamed_and_kept_with_its_signature(fake_anthropic, claude):
    fake_anthropic.enqueue(
        Reply(
            "Answer.",
            thinking=[ThinkingBlock("first, check", "sig-A"), RedactedThinking("opaque==")],
        )
    )

    deltas, message = await run(
        claude, ask(UserMessage(content="q"), extra={"thinking_budget": 2048})
    )

    assert [d.text for d in deltas if isinstance(d, ThinkingDelta)] == ["firs", "t, c", "heck"]
    assert message.thinking == (
        Thinking(text="first, check", signature="sig-A", provider="anthropic"),
        Thinking(text="", signature="opaque==", provider="anthropic-redacted"),
    )
    body = fake_anthropic.message_bodies()[0]
    assert body["thinking"] == {"type": "enabled", "budget_tokens": 2048}
    assert body["max_tokens"] == 8192


async def test_usage_includes_cache_reads_and_writes(fake_anthropic, claude):
    usage = {
        "input_tokens": 12,
        "output_tokens": 30,
        "cache_creation_input_tokens": 1500,
        "cache_read_input_tokens": 4000,
    }
    fake_anthropic.enqueue(Reply("ok", usage=usage))

    _, message = await run(claude, ask(UserMessage(content="q")))

    assert message.usage == Usage(
        input_tokens=12, output_tokens=30, cache_read_tokens=4000, cache_write_tokens=1500
    )


@pytest.mark.parametrize(
    ("wire", "expected"),
    [
        ("end_turn", StopReason.END),
        ("stop_sequence", StopReason.END),
        ("max_tokens", StopReason.MAX_TOKENS),
        ("refusal", StopReason.CONTENT_FILTER),
        ("tool_use", StopReason.TOOL_USE),
    ],
)
async def test_stop_reasons_map(fake_anthropic, claude, wire, expected):
    fake_anthropic.enqueue(Reply("x", stop_reason=wire))

    _, message = await run(claude, ask(UserMessage(content="q")))

    assert message.stop_reason is expected


# what is sent


async def test_request_caches_the_system_prompt_and_tools_and_sends_max_tokens(
    fake_anthropic, claude
):
    fake_anthropic.enqueue(Reply("ok"))

    await run(claude, ask(UserMessage(content="hi"), tools=[READ, GREP], temperature=0.2))

    body = fake_anthropic.message_bodies()[0]
    assert body["model"] == "fake-claude"
    assert body["stream"] is True
    assert body["max_tokens"] == 8192
    assert body["temperature"] == 0.2
    assert body["system"] == [{"type": "text", "text": "You are terse.", "cache_control": CACHE}]
    assert body["tools"] == [
        {"name": "read", "description": "read a file", "input_schema": {"type": "object"}},
        {
            "name": "grep",
            "description": "search",
            "input_schema": {"type": "object"},
            "cache_control": CACHE,
        },
    ]
    assert body["messages"] == [
        {"role": "user", "content": [{"type": "text", "text": "hi", "cache_control": CACHE}]}
    ]


async def test_max_output_tokens_and_extra_are_sent(fake_anthropic, claude):
    fake_anthropic.enqueue(Reply("ok"))

    await run(
        claude,
        ask(UserMessage(content="hi"), max_output_tokens=1000, extra={"thinking_budget": 4000}),
    )

    body = fake_anthropic.message_bodies()[0]
    assert body["thinking"] == {"type": "enabled", "budget_tokens": 4000}
    assert body["max_tokens"] == 5000  # the budget must fit under max_tokens
    assert "temperature" not in body


async def test_extra_body_keys_and_headers_reach_the_server(fake_anthropic):
    provider = AnthropicProvider(
        "fake-claude", fake_anthropic.base_url + "/v1/", SECRET, extra_headers={"X-Team": "core"}
    )
    fake_anthropic.enqueue(Reply("ok"))
    try:
        await run(provider, ask(UserMessage(content="hi"), extra={"top_k": 5}))
    finally:
        await provider.aclose()

    [request] = fake_anthropic.requests
    assert request.path == "/v1/messages"  # a base URL ending in /v1 is tolerated
    assert request.headers["x-team"] == "core"
    assert request.body["top_k"] == 5


async def test_a_conversation_maps_to_alternating_turns_with_grouped_tool_results(
    fake_anthropic, claude
):
    history = [
        UserMessage(content="fix the bug"),
        AssistantMessage(
            text="Reading both.",
            thinking=(Thinking(text="two files", signature="sig-1", provider="anthropic"),),
            tool_calls=(
                ToolCall(id="toolu_1", name="read", arguments='{"path": "a.py"}'),
                ToolCall(id="toolu_2", name="read", arguments='{"path": "b.py'),
            ),
            stop_reason=StopReason.TOOL_USE,
        ),
        ToolResultMessage(tool_call_id="toolu_1", name="read", content="1\tx = 1"),
        ToolResultMessage(
            tool_call_id="toolu_2", name="read", content="invalid JSON arguments", is_error=True
        ),
        UserMessage(content="also check c.py"),
        AssistantMessage(text="Done."),
        UserMessage(content="thanks"),
        UserMessage(content="one more thing"),
    ]
    fake_anthropic.enqueue(Reply("ok"))

    await run(claude, ask(*history, tools=[READ]))

    assert fake_anthropic.message_bodies()[0]["messages"] == [
        {"role": "user", "content": [{"type": "text", "text": "fix the bug"}]},
        {
            "role": "assistant",
            "content": [
                {"type": "thinking", "thinking": "two files", "signature": "sig-1"},
                {"type": "text", "text": "Reading both."},
                {"type": "tool_use", "id": "toolu_1", "name": "read", "input": {"path": "a.py"}},
                {
                    "type": "tool_use",
                    "id": "toolu_2",
                    "name": "read",
                    "input": {"_raw_arguments": '{"path": "b.py'},
                },
            ],
        },
        {
            "role": "user",
            "content": [
                {"type": "tool_result", "tool_use_id": "toolu_1", "content": "1\tx = 1"},
                {
                    "type": "tool_result",
                    "tool_use_id": "toolu_2",
                    "content": "invalid JSON arguments",
                    "is_error": True,
                },
                {"type": "text", "text": "also check c.py"},
            ],
        },
        {"role": "assistant", "content": [{"type": "text", "text": "Done."}]},
        {
            "role": "user",
            "content": [
                {"type": "text", "text": "thanks"},
                {"type": "text", "text": "one more thing", "cache_control": CACHE},
            ],
        },
    ]


async def test_thinking_from_another_vendor_is_carried_as_text(fake_anthropic, claude):
    history = [
        UserMessage(content="q"),
        AssistantMessage(
            text="",
            thinking=(
                Thinking(text="maybe grep first", provider="openai_chat"),
                Thinking(text="unsigned", signature=None, provider="anthropic"),
                Thinking(text="foreign signed", signature="gpt-sig", provider="other"),
            ),
            tool_calls=(ToolCall(id="call_0", name="grep", arguments='{"pattern": "x"}'),),
            stop_reason=StopReason.TOOL_USE,
        ),
        ToolResultMessage(tool_call_id="call_0", name="grep", content=""),
    ]
    fake_anthropic.enqueue(Reply("ok"))

    await run(claude, ask(*history, tools=[GREP]))

    messages = fake_anthropic.message_bodies()[0]["messages"]
    assert messages[1]["content"] == [
        {"type": "text", "text": "<earlier_reasoning>\nmaybe grep first\n</earlier_reasoning>"},
        {"type": "text", "text": "<earlier_reasoning>\nunsigned\n</earlier_reasoning>"},
        {"type": "text", "text": "<earlier_reasoning>\nforeign signed\n</earlier_reasoning>"},
        {"type": "tool_use", "id": "call_0", "name": "grep", "input": {"pattern": "x"}},
    ]
    assert messages[2] == {
        "role": "user",
        "content": [{"type": "tool_result", "tool_use_id": "call_0", "cache_control": CACHE}],
    }


async def test_empty_turns_get_placeholders_so_the_api_accepts_them(fake_anthropic, claude):
    history = [AssistantMessage(text=""), UserMessage(content=""), AssistantMessage(text="")]
    fake_anthropic.enqueue(Reply("ok"))

    await run(claude, ask(*history, UserMessage(content="go on"), system=""))

    body = fake_anthropic.message_bodies()[0]
    assert "system" not in body
    assert [m["role"] for m in body["messages"]] == [
        "user",
        "assistant",
        "user",
        "assistant",
        "user",
    ]
    assert body["messages"][1]["content"] == [{"type": "text", "text": "(empty reply)"}]


async def test_the_sdk_is_imported_only_when_the_first_request_is_made():
    import subprocess
    import sys

    code = (
        "import sys\n"
        "from lathe.llm.anthropic import AnthropicProvider\n"
        "AnthropicProvider('m', None, 'k')\n"
        "print('anthropic' in sys.modules)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


async def test_the_fake_refuses_what_the_real_api_refuses(fake_anthropic, claude):
    orphan_call = AssistantMessage(
        tool_calls=(ToolCall(id="toolu_9", name="read", arguments="{}"),),
        stop_reason=StopReason.TOOL_USE,
    )
    fake_anthropic.enqueue(Reply("never served"))

    error = await failure(
        claude, ask(UserMessage(content="q"), orphan_call, UserMessage(content="?"))
    )

    assert type(error) is BadRequest
    assert "without tool_result" in str(error)
    assert fake_anthropic.remaining == 1
