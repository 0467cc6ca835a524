"""What one server's sessions share: a bound on commands running at once and one on
model calls in flight to each endpoint. A call beyond a bound waits for a slot and says
so with a `queued` event; it never fails for the wait.

`LimitedExecutor` and `LimitedProvider` wrap a session's own executor and provider
(the `Executor` and `Provider` seams), so the loop and the tools know nothing of it.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Callable
from typing import Any, Literal

from lathe.events import AgentEvent, Queued

Emit = Callable[[AgentEvent], None]


class Slots:
    """At most `limit` holders at once; the others wait in order."""

    def __init__(self, what: Literal["command", "model_call"], limit: int) -> None:
        self.what = what
        self.limit = limit
        self.running = 0
        self.waiting = 0
        self._free = asyncio.Semaphore(limit)

    @contextlib.asynccontextmanager
    async def held(self, emit: Emit) -> AsyncIterator[None]:
        if self._free.locked():
            self.waiting += 1
            emit(Queued(what=self.what, waiting=self.waiting, limit=self.limit))
            try:
                await self._free.acquire()
            finally:
                self.waiting -= 1
        else:
            await self._free.acquire()
        self.running += 1
        try:
            yield
        finally:
            self.running -= 1
            self._free.release()


class ServerLimits:
    """The bounds of one server: `max_commands` for all commands, and
    `max_model_calls` for each endpoint (provider kind and base URL) on its own."""

    def __init__(self, max_commands: int, max_model_calls: int) -> None:
        self.commands = Slots("command", max_commands)
        self.max_model_calls = max_model_calls
        self._model_calls: dict[tuple[str, str], Slots] = {}

    def model_calls(self, kind: str, base_url: str) -> Slots:
        key = (kind, base_url)
        if key not in self._model_calls:
            self._model_calls[key] = Slots("model_call", self.max_model_calls)
        return self._model_calls[key]

    @property
    def queued_model_calls(self) -> int:
        return sum(slots.waiting for slots in self._model_calls.values())

    @property
    def model_calls_in_flight(self) -> int:
        return sum(slots.running for slots in self._model_calls.values())


class LimitedExecutor:
    """An Executor whose commands each hold a slot of `slots` while they run."""

    def __init__(self, inner: Any, slots: Slots, emit: Emit) -> None:
        self._inner = inner
        self._slots = slots
        self._emit = emit

    async def run(self, command: str, **options: Any) -> Any:
        async with self._slots.held(self._emit):
            return await self._inner.run(command, **options)

    def __getattr__(self, name: str) -> Any:  # the sandbox's own attributes (aclose ...)
        return getattr(self._inner, name)


class LimitedProvider:
    """A Provider whose requests each hold a slot of `slots` while they stream."""

    def __init__(self, inner: Any, slots: Slots, emit: Emit) -> None:
        self._inner = inner
        self._slots = slots
        self._emit = emit

    @property
    def model(self) -> str:
        return self._inner.model

    async def stream(self, request: Any) -> AsyncIterator[Any]:
        async with self._slots.held(self._emit):
            async for event in self._inner.stream(request):
                yield event

    async def aclose(self) -> None:
        await self._inner.aclose()

    def __getattr__(self, name: str) -> Any:  # warm_up and the like
        return getattr(self._inner, name)
