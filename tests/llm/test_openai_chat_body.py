"""The body OpenAIChatProvider sends, encoded chunk by chunk with each chunk's encoding
cached, is byte for byte the body converted and encoded whole, request after request."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from lathe.agent.request_view import RequestView
from lathe.llm.base import ModelRequest
from lathe.llm.http_stream import json_bytes
from lathe.llm.openai_chat import OpenAIChatProvider, wire_messages
from lathe.types import AssistantMessage, ToolCall, ToolResultMessage, UserMessage

_text = st.text(alphabet=st.sampled_from('ab "\\\n\u00e9\u4e2d\U0001f600'), max_size=12)


@st.composite
def _turns(draw):
    turns = []
    for i in range(draw(st.integers(1, 12))):
        calls = tuple(
            ToolCall(id=f"c{i}-{j}", name="bash", arguments=draw(st.sampled_from(["", "{}"])))
            for j in range(draw(st.integers(0, 2)))
        )
        turn = [AssistantMessage(text=draw(_text), tool_calls=calls)]
        turn += [
            ToolResultMessage(
                tool_call_id=call.id,
                name="bash",
                content=draw(_text) * draw(st.integers(0, 300)),
                is_error=draw(st.booleans()),
            )
            for call in calls
        ]
        if draw(st.booleans()):
            turn.append(UserMessage(content=draw(_text)))
        turns.append(turn)
    return turns


@settings(max_examples=150, deadline=None)
@given(
    _turns(),
    st.sampled_from(["", "sys \u00e9"]),
    st.sampled_from([{}, {"top_p": 0.5}, {"messages": []}, {"stream": False}]),
    st.lists(st.one_of(st.none(), st.integers(0, 400)), min_size=1, max_size=4),
)
def test_the_body_is_what_encoding_it_whole_gives(turns, system, extra, keeps):
    provider = OpenAIChatProvider("m", "http://localhost:1", "")
    view = RequestView(chunk=2)
    history: list = [UserMessage(content="task")]
    for index, turn in enumerate(turns):
        history += turn
        messages = view.update(history, keeps[index % len(keeps)])
        request = ModelRequest(
            system=system, messages=messages, tools=[], max_output_tokens=5, extra=extra
        )

        whole = provider._body(request)
        if "messages" not in extra:
            whole["messages"] = wire_messages(system, list(messages))
        assert provider._encoded_body(request) == json_bytes(whole)
