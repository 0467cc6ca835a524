"""AnthropicProvider builds the conversation from each chunk's cached turns, and what it
sends equals `wire_messages` over the whole conversation, request after request, however
the chunks grow, are rewritten or meet with turns of one role on both sides."""

from __future__ import annotations

import copy

from hypothesis import given, settings
from hypothesis import strategies as st

from lathe.chunked import Chunks
from lathe.llm.anthropic import THINKING_SOURCE, AnthropicProvider, wire_messages
from lathe.types import AssistantMessage, Thinking, ToolCall, ToolResultMessage, UserMessage

_ids = iter(range(10**9))


@st.composite
def _message(draw):
    kind = draw(st.sampled_from(["user", "assistant", "result"]))
    text = draw(st.sampled_from(["", "hi", "more"]))
    if kind == "user":
        return UserMessage(content=text)
    if kind == "result":
        return ToolResultMessage(
            tool_call_id=f"c{next(_ids)}", name="bash", content=text, is_error=draw(st.booleans())
        )
    calls = tuple(
        ToolCall(
            id=f"c{next(_ids)}", name="bash", arguments=draw(st.sampled_from(["", "{}", "[1]"]))
        )
        for _ in range(draw(st.integers(0, 2)))
    )
    thinking = (Thinking(text="hmm", signature="sig", provider=THINKING_SOURCE),)
    return AssistantMessage(
        text=text, tool_calls=calls, thinking=draw(st.sampled_from([(), thinking]))
    )


# Between two requests: grow the last chunk, start a new one, or rewrite one message.
_steps = st.tuples(
    st.sampled_from(["grow", "start", "rewrite"]),
    st.lists(_message(), min_size=1, max_size=3),
    st.integers(0, 40),
)


@settings(max_examples=200, deadline=None)
@given(st.lists(_steps, min_size=1, max_size=20))
def test_the_conversation_equals_wire_messages_over_the_whole(steps):
    provider = AnthropicProvider("claude", None, "")
    chunks: list[tuple] = []
    sent_before: list = []
    for action, messages, at in steps:
        if action == "grow" and chunks:
            chunks[-1] = (*chunks[-1], *messages)
        elif action == "rewrite" and chunks:
            chunk = list(chunks[at % len(chunks)])
            chunk[at % len(chunk)] = messages[0]
            chunks[at % len(chunks)] = tuple(chunk)
        else:
            chunks.append(tuple(messages))
        conversation = Chunks(chunks)
        earlier = copy.deepcopy(sent_before)

        sent = provider._wire_conversation(conversation)

        assert sent == wire_messages(list(conversation))
        assert sent_before == earlier  # what an earlier request sent is never changed
        sent_before = sent
