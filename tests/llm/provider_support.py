"""Helpers shared by the OpenAIChatProvider tests."""

from __future__ import annotations

import pytest

from lathe.errors import ProviderError
from lathe.llm.base import Completed, ModelRequest, StreamEvent
from lathe.llm.openai_chat import OpenAIChatProvider
from lathe.llm.timeouts import Timeouts
from lathe.types import AssistantMessage, UserMessage

SECRET = "sk-test-very-secret-0123456789"
# Short limits, so that a test whose server misbehaves fails in seconds, not minutes.
QUICK = Timeouts(total_s=5, idle_s=5)
HELLO = ModelRequest(system="You are terse.", messages=[UserMessage(content="hi")], tools=[])


async def run(
    provider: OpenAIChatProvider, request: ModelRequest = HELLO
) -> tuple[list[StreamEvent], AssistantMessage]:
    """The deltas and the completed message, checking Completed comes once and last."""
    events = [event async for event in provider.stream(request)]
    assert isinstance(events[-1], Completed), "a stream must end with Completed"
    assert not any(isinstance(e, Completed) for e in events[:-1])
    return events[:-1], events[-1].message


async def failure(provider: OpenAIChatProvider, request: ModelRequest = HELLO) -> ProviderError:
    """The ProviderError the stream raises (any other exception fails the test)."""
    with pytest.raises(ProviderError) as caught:
        async for _ in provider.stream(request):
            pass
    return caught.value
