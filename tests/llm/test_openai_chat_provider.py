"""OpenAIChatProvider against the fake server over real HTTP: what it yields and what
the server received."""

from __future__ import annotations

import pytest
from tests.fakes.openai_server import Call, Reply
from tests.llm.provider_support import SECRET, run

from lathe.llm.base import ModelRequest, TextDelta, ThinkingDelta
from lathe.llm.openai_chat import OpenAIChatProvider
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

# replies


async def test_streams_text_deltas_then_the_whole_message(fake_openai, provider):
    fake_openai.enqueue(Reply("Hello, world!", text_chunk=3))

    deltas, message = await run(provider)

    assert [d.text for d in deltas] == ["Hel", "lo,", " wo", "rld", "!"]
    assert all(isinstance(d, TextDelta) for d in deltas)
    assert message == AssistantMessage(
        text="Hello, world!",
        stop_reason=StopReason.END,
        usage=Usage(input_tokens=12, output_tokens=7),
        model="fake-model",
    )


async def test_tool_call_arguments_split_over_deltas_and_interleaved_are_assembled(
    fake_openai, provider
):
    fake_openai.enqueue(
        Reply(
            "Let me look.",
            calls=[
                Call("read", {"path": "src/app.py", "offset": 10}, id="call_a"),
                Call("grep", {"pattern": "def main", "glob": "*.py"}, id="call_b"),
            ],
            args_chunk=3,
            interleave=True,
        )
    )

    _, message = await run(provider)

    assert message.tool_calls == (
        ToolCall(id="call_a", name="read", arguments='{"path": "src/app.py", "offset": 10}'),
        ToolCall(id="call_b", name="grep", arguments='{"pattern": "def main", "glob": "*.py"}'),
    )
    assert message.stop_reason is StopReason.TOOL_USE
    assert message.text == "Let me look."


async def test_malformed_arguments_are_passed_through_verbatim(fake_openai, provider):
    fake_openai.enqueue(Reply(calls=[Call("edit", '{"path": "a.py", "old_string": "x')]))

    _, message = await run(provider)

    assert message.tool_calls[0].arguments == '{"path": "a.py", "old_string": "x'


async def test_deltas_without_index_are_grouped_by_id_then_by_order(fake_openai, provider):
    fake_openai.enqueue(
        Reply(
            calls=[Call("ls", {"path": "."}, id="c1"), Call("ls", {"path": "src"}, id="c2")],
            omit_index=True,
            args_chunk=4,
        )
    )

    _, message = await run(provider)

    assert [(c.id, c.arguments) for c in message.tool_calls] == [
        ("c1", '{"path": "."}'),
        ("c2", '{"path": "src"}'),
    ]


async def test_usage_is_captured_with_cached_tokens_split_out(fake_openai, provider):
    fake_openai.enqueue(
        Reply(
            "ok",
            usage={
                "prompt_tokens": 1000,
                "completion_tokens": 50,
                "total_tokens": 1050,
                "prompt_tokens_details": {"cached_tokens": 800},
            },
        )
    )

    _, message = await run(provider)

    assert message.usage == Usage(input_tokens=200, output_tokens=50, cache_read_tokens=800)


async def test_a_server_that_ignores_include_usage_gets_its_usage_estimated(
    fake_openai, provider
):
    # Counted as zero, the token and cost budgets never tripped on such a server.
    fake_openai.enqueue(Reply("ok", usage_when="never"))

    _, message = await run(provider)

    assert message.text == "ok"
    sent = int(fake_openai.requests[-1].headers["content-length"])
    assert message.usage == Usage(input_tokens=sent // 3 + 1, output_tokens=1)


async def test_rejected_stream_options_are_dropped_once_and_remembered(fake_openai, provider):
    fake_openai.reject_stream_options = True
    fake_openai.enqueue(Reply("first"), Reply("second"))

    _, first = await run(provider)
    _, second = await run(provider)

    assert (first.text, second.text) == ("first", "second")
    sent = [("stream_options" in body) for body in fake_openai.chat_bodies()]
    assert sent == [True, False, False]


async def test_reasoning_content_becomes_thinking(fake_openai, provider):
    fake_openai.enqueue(Reply("42", reasoning="six times seven", text_chunk=5))

    events, message = await run(provider)

    assert [type(e) for e in events] == [ThinkingDelta] * 3 + [TextDelta]
    assert "".join(e.text for e in events if isinstance(e, ThinkingDelta)) == "six times seven"
    assert message.thinking == (Thinking(text="six times seven", provider="openai_chat"),)


@pytest.mark.parametrize(
    ("finish_reason", "calls", "expected"),
    [
        ("stop", (), StopReason.END),
        ("stop", (Call("ls"),), StopReason.TOOL_USE),
        ("tool_calls", (Call("ls"),), StopReason.TOOL_USE),
        ("function_call", (Call("ls"),), StopReason.TOOL_USE),
        ("length", (), StopReason.MAX_TOKENS),
        ("content_filter", (), StopReason.CONTENT_FILTER),
    ],
)
async def test_finish_reasons_map_to_stop_reasons(
    fake_openai, provider, finish_reason, calls, expected
):
    fake_openai.enqueue(Reply("x", calls=calls, finish_reason=finish_reason))

    _, message = await run(provider)

    assert message.stop_reason is expected


async def test_a_plain_json_body_is_read_as_one_reply(fake_openai, provider):
    fake_openai.enqueue(Reply("whole", calls=[Call("ls", {"path": "."}, id="c9")], stream=False))

    deltas, message = await run(provider)

    assert deltas == [TextDelta("whole")]
    assert message.tool_calls == (ToolCall(id="c9", name="ls", arguments='{"path": "."}'),)
    assert message.stop_reason is StopReason.TOOL_USE
    assert message.usage.output_tokens == 7


# the request the server received


async def test_requests_one_after_another_reuse_one_connection(fake_openai, provider):
    fake_openai.enqueue(Reply("one"), Reply("two"), Reply("three", stream=False))

    replies = [(await run(provider))[1].text for _ in range(3)]

    assert replies == ["one", "two", "three"]
    assert len({request.client_port for request in fake_openai.requests}) == 1


async def test_without_a_key_no_authorization_header_is_sent(fake_openai):
    fake_openai.enqueue(Reply("ok"))
    provider = OpenAIChatProvider("m", fake_openai.base_url, "")

    await run(provider)
    await provider.aclose()

    [received] = fake_openai.requests
    assert "authorization" not in received.headers
    assert received.headers["user-agent"].startswith("lathe/")


async def test_the_request_maps_the_conversation_tools_and_options(fake_openai):
    fake_openai.enqueue(Reply("done"))
    provider = OpenAIChatProvider(
        "my-model", fake_openai.base_url, SECRET, extra_headers={"X-Team": "lathe"}
    )
    conversation = [
        UserMessage(content="fix the bug"),
        AssistantMessage(
            text="Reading.",
            thinking=(Thinking(text="private reasoning", provider="anthropic", signature="s"),),
            tool_calls=(
                ToolCall(id="call_1", name="read", arguments='{"path": "a.py"}'),
                ToolCall(id="call_2", name="bash", arguments='{"command": "pytest"}'),
            ),
            stop_reason=StopReason.TOOL_USE,
        ),
        ToolResultMessage(tool_call_id="call_1", name="read", content="   1\tx = 1"),
        ToolResultMessage(tool_call_id="call_2", name="bash", content="exit 1", is_error=True),
        AssistantMessage(text="", tool_calls=(ToolCall(id="call_3", name="ls", arguments=""),)),
        ToolResultMessage(tool_call_id="call_3", name="ls", content="a.py"),
    ]
    schema = {"type": "object", "properties": {"path": {"type": "string"}}}
    request = ModelRequest(
        system="Be exact.",
        messages=conversation,
        tools=[ToolSpec(name="read", description="Read a file.", parameters=schema)],
        max_output_tokens=512,
        temperature=0.2,
        extra={"top_k": 20},
    )

    await run(provider, request)
    await provider.aclose()

    [received] = fake_openai.requests
    assert (received.method, received.path) == ("POST", "/v1/chat/completions")
    assert received.headers["authorization"] == f"Bearer {SECRET}"
    assert received.headers["x-team"] == "lathe"
    assert received.body == {
        "model": "my-model",
        "stream": True,
        "stream_options": {"include_usage": True},
        "max_tokens": 512,
        "temperature": 0.2,
        "top_k": 20,
        "tools": [
            {
                "type": "function",
                "function": {"name": "read", "description": "Read a file.", "parameters": schema},
            }
        ],
        "messages": [
            {"role": "system", "content": "Be exact."},
            {"role": "user", "content": "fix the bug"},
            {
                "role": "assistant",
                "content": "Reading.",
                "tool_calls": [
                    {
                        "id": "call_1",
                        "type": "function",
                        "function": {"name": "read", "arguments": '{"path": "a.py"}'},
                    },
                    {
                        "id": "call_2",
                        "type": "function",
                        "function": {"name": "bash", "arguments": '{"command": "pytest"}'},
                    },
                ],
            },
            {"role": "tool", "tool_call_id": "call_1", "content": "   1\tx = 1"},
            {"role": "tool", "tool_call_id": "call_2", "content": "Error: exit 1"},
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {
                        "id": "call_3",
                        "type": "function",
                        "function": {"name": "ls", "arguments": "{}"},
                    }
                ],
            },
            {"role": "tool", "tool_call_id": "call_3", "content": "a.py"},
        ],
    }


async def test_no_system_message_and_no_tools_when_there_are_none(fake_openai, provider):
    fake_openai.enqueue(Reply("ok"))

    await run(provider, ModelRequest(system="", messages=[UserMessage(content="hi")], tools=[]))

    [body] = fake_openai.chat_bodies()
    assert body["messages"] == [{"role": "user", "content": "hi"}]
    assert "tools" not in body
