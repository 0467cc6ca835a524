"""A provider that replays a queue of scripted replies: for tests and demos.

Each queued item is an `AssistantMessage` (streamed as text deltas, then completed), a
`ProviderError` instance (raised when its turn comes), or a callable taking the
`ModelRequest` and returning either. Every request is recorded in `requests`.
"""

from __future__ import annotations

import dataclasses
import itertools
import json
from collections import deque
from collections.abc import AsyncIterator, Callable, Iterable

from lathe.errors import BadRequest, ProviderError
from lathe.llm.base import Completed, ModelRequest, StreamEvent, TextDelta
from lathe.types import AssistantMessage, StopReason, ToolCall

ScriptItem = (
    AssistantMessage | ProviderError | Callable[[ModelRequest], AssistantMessage | ProviderError]
)
_call_ids = itertools.count(1)


class ScriptedProvider:
    def __init__(self, replies: Iterable[ScriptItem] = (), *, model: str = "scripted") -> None:
        self._queue: deque[ScriptItem] = deque(replies)
        self._model = model
        self.requests: list[ModelRequest] = []

    @property
    def model(self) -> str:
        return self._model

    def enqueue(self, *items: ScriptItem) -> None:
        self._queue.extend(items)

    async def stream(self, request: ModelRequest) -> AsyncIterator[StreamEvent]:
        self.requests.append(request)
        if not self._queue:
            raise BadRequest("the scripted provider has no more replies queued")
        item = self._queue.popleft()
        if callable(item) and not isinstance(item, AssistantMessage | ProviderError):
            item = item(request)
        if isinstance(item, ProviderError):
            raise item
        for start in range(0, len(item.text), 16):
            yield TextDelta(item.text[start : start + 16])
        if item.tool_calls and item.stop_reason is StopReason.END:
            item = dataclasses.replace(item, stop_reason=StopReason.TOOL_USE)
        yield Completed(dataclasses.replace(item, model=item.model or self._model))

    async def aclose(self) -> None:
        return None


def reply(text: str = "", *calls: tuple[str, dict | str]) -> AssistantMessage:
    """Shorthand for scripts: reply("done") or reply("", ("read", {"path": "a.py"}))."""
    tool_calls = tuple(
        ToolCall(
            id=f"call_{next(_call_ids)}",
            name=name,
            arguments=args if isinstance(args, str) else json.dumps(args),
        )
        for name, args in calls
    )
    return AssistantMessage(text=text, tool_calls=tool_calls)
