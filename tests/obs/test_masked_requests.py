"""The masking provider sends what masking every message afresh would, request after
request, however the request's chunks are reused or rebuilt, and after new secrets."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from lathe.agent.request_view import RequestView
from lathe.llm.base import ModelRequest
from lathe.llm.scripted import ScriptedProvider, reply
from lathe.obs.redact import Redactor
from lathe.types import AssistantMessage, ToolCall, ToolResultMessage, UserMessage

OLD_KEY, NEW_KEY = "sk-old-secret-123456", "sk-new-secret-654321"


def _turn(i: int, content: str) -> list:
    call = ToolCall(id=f"c{i}", name="bash", arguments=f'{{"command": "echo {content}"}}')
    return [
        AssistantMessage(text=f"step {i}", tool_calls=(call,)),
        ToolResultMessage(tool_call_id=call.id, name="bash", content=content * 50),
    ]


async def _sent(provider, inner: ScriptedProvider, messages) -> list:
    inner.enqueue(reply("ok"))
    async for _ in provider.stream(
        ModelRequest(system=f"key {OLD_KEY}", messages=messages, tools=[])
    ):
        pass
    return inner.requests[-1]


@settings(max_examples=100, deadline=None)
@given(
    st.lists(st.sampled_from(["plain", OLD_KEY, NEW_KEY]), min_size=1, max_size=30),
    st.lists(st.integers(0, 3_000), min_size=1, max_size=5),
    st.integers(0, 30),
)
async def test_requests_are_masked_as_every_message_afresh(contents, keeps, new_secret_at):
    redactor = Redactor([OLD_KEY])
    inner = ScriptedProvider()
    provider = redactor.provider(inner)
    view = RequestView(chunk=3)
    history: list = [UserMessage(content=f"task {OLD_KEY}")]
    for turn, content in enumerate(contents):
        history += _turn(turn, content)
        if turn == new_secret_at:
            redactor.include([NEW_KEY])
        sent = await _sent(provider, inner, view.update(history, keeps[turn % len(keeps)]))

        expected = [redactor.message(m) for m in view.update(history, keeps[turn % len(keeps)])]
        assert list(sent.messages) == expected
        assert OLD_KEY not in sent.system
        assert all(OLD_KEY not in str(m) for m in sent.messages)
