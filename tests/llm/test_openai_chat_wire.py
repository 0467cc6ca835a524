"""What a model profile's wire part changes in OpenAIChatProvider, against the fake server
over real HTTP: the output-limit field, stream_options, and thinking written inline."""

from __future__ import annotations

import pytest
from tests.fakes.openai_server import Call, Reply
from tests.llm.provider_support import HELLO, QUICK, SECRET, run

from lathe.llm.base import ModelRequest, TextDelta, ThinkingDelta
from lathe.llm.openai_chat import OpenAIChatProvider
from lathe.types import AssistantMessage, Thinking, UserMessage

LIMITED = ModelRequest(
    system="", messages=[UserMessage(content="hi")], tools=[], max_output_tokens=9
)


async def provider_for(server, **wire) -> OpenAIChatProvider:
    return OpenAIChatProvider("fake-model", server.base_url, SECRET, timeouts=QUICK, **wire)


@pytest.mark.parametrize("field", ["max_tokens", "max_completion_tokens"])
async def test_the_output_limit_goes_in_the_field_the_profile_names(fake_openai, field):
    fake_openai.enqueue(Reply("ok"))
    provider = await provider_for(fake_openai, max_tokens_field=field)

    await run(provider, LIMITED)
    await provider.aclose()

    [body] = fake_openai.chat_bodies()
    other = {"max_tokens", "max_completion_tokens"} - {field}
    assert body[field] == 9 and not other & set(body)


async def test_the_default_field_is_max_tokens_even_for_api_openai_com():
    # No URL decides it any more: a provider built for api.openai.com is told by its profile.
    provider = OpenAIChatProvider("gpt-4o", None, SECRET)
    body = provider._body(LIMITED)
    assert "max_tokens" in body
    assert "max_completion_tokens" not in body


async def test_stream_options_off_are_never_sent(fake_openai):
    fake_openai.enqueue(Reply("ok", usage_when="always"))
    provider = await provider_for(fake_openai, stream_options=False)

    _, message = await run(provider)
    await provider.aclose()

    assert "stream_options" not in fake_openai.chat_bodies()[0]
    assert message.usage.output_tokens == 7  # a server that sends usage anyway is still read


# thinking written inline


INLINE = "<think>\nThe bug is in tax().\n</think>\n\nDivide by 100, not 10."


@pytest.mark.parametrize("chunk", [1, 2, 3, 5, 7, 8, 100])
async def test_inline_thinking_is_split_off_however_the_tags_are_cut(fake_openai, chunk):
    fake_openai.enqueue(Reply(INLINE, text_chunk=chunk))
    provider = await provider_for(fake_openai, thinking_in_text=True)

    deltas, message = await run(provider)
    await provider.aclose()

    assert message.text == "Divide by 100, not 10."
    assert message.thinking == (Thinking(text="\nThe bug is in tax().\n", provider="openai_chat"),)
    assert "".join(d.text for d in deltas if isinstance(d, TextDelta)) == message.text
    assert (
        "".join(d.text for d in deltas if isinstance(d, ThinkingDelta)) == message.thinking[0].text
    )


async def test_text_before_and_between_thinking_blocks_is_kept(fake_openai):
    fake_openai.enqueue(
        Reply("Let me see. <think>a</think>First. <think>b</think>Second.", text_chunk=4)
    )
    provider = await provider_for(fake_openai, thinking_in_text=True)

    _, message = await run(provider)
    await provider.aclose()

    assert message.text == "Let me see. First. Second."
    assert message.thinking[0].text == "ab"


async def test_an_unclosed_thinking_block_is_thinking_to_the_end(fake_openai):
    fake_openai.enqueue(Reply("<think>still going", text_chunk=3, finish_reason="length"))
    provider = await provider_for(fake_openai, thinking_in_text=True)

    _, message = await run(provider)
    await provider.aclose()

    assert message.text == ""
    assert message.thinking[0].text == "still going"


async def test_a_lone_angle_bracket_or_a_near_tag_is_text(fake_openai):
    text = "if a <b and c <thin> d < e, <think"
    fake_openai.enqueue(Reply(text, text_chunk=2))
    provider = await provider_for(fake_openai, thinking_in_text=True)

    deltas, message = await run(provider)
    await provider.aclose()

    assert message.text == text
    assert message.thinking == ()
    assert "".join(d.text for d in deltas) == text


async def test_inline_thinking_with_tool_calls_keeps_the_calls(fake_openai):
    fake_openai.enqueue(
        Reply("<think>read it</think>", calls=[Call("read", {"path": "a.py"})], text_chunk=2)
    )
    provider = await provider_for(fake_openai, thinking_in_text=True)

    _, message = await run(provider)
    await provider.aclose()

    assert message.text == ""
    assert [c.name for c in message.tool_calls] == ["read"]
    assert message.thinking[0].text == "read it"


async def test_without_the_flag_tags_are_text(fake_openai, provider):
    fake_openai.enqueue(Reply(INLINE, text_chunk=3))

    _, message = await run(provider, HELLO)

    assert message == AssistantMessage(
        text=INLINE, stop_reason=message.stop_reason, usage=message.usage, model="fake-model"
    )
