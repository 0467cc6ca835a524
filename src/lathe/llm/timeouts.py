"""How long one attempt at a model call may take, and the deadline that makes the total
a total.

An attempt (one opening of the stream, until its last event) has two limits:

- idle: no byte from the server for `idle_s` seconds, whether while connecting, before
  the response headers or between any two chunks. httpx enforces it: its connect, read,
  write and pool timeouts each bound one operation, which is exactly "no progress for N
  seconds", so all four are set to `idle_s`.
- total: `total_s` seconds in all. httpx has no such limit (its read timeout restarts
  with every read, so a server trickling a chunk every few seconds never trips it), so
  `within_total` puts a deadline around the whole attempt.

Either one is a `Transport` error, so the retry policy may try again; its message names
the config key that sets the limit (`total_key`, `idle_key`).
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncGenerator, Callable
from dataclasses import dataclass
from typing import Any

from lathe.llm.base import StreamEvent


@dataclass(frozen=True)
class Timeouts:
    """The two limits of one attempt and the config keys that set them."""

    total_s: float = 600.0
    idle_s: float = 120.0
    total_key: str = "timeout_s"
    idle_key: str = "idle_timeout_s"

    def for_httpx(self) -> Any:
        """The idle limit as the httpx2 timeout the anthropic SDK client takes."""
        import httpx2  # lazily, with the SDK that needs it

        return httpx2.Timeout(self.idle_s)


DEFAULT_TIMEOUTS = Timeouts()


class TotalTimeExceeded(Exception):
    """Raised by `within_total` when the attempt's deadline passes; the error mapping
    turns it into a Transport error naming the limit."""


async def within_total(
    events: AsyncGenerator[StreamEvent, None],
    total_s: float,
    *,
    before: Callable[[], object] | None = None,
) -> AsyncGenerator[StreamEvent, None]:
    """`events`, stopped with TotalTimeExceeded once `total_s` seconds have passed since
    the first event was asked for; `events` is closed however this ends. `before` runs
    first, off the clock: work that is lathe's, not the server's (importing the SDK
    takes over a second, more on a busy machine)."""
    if before is not None:
        before()
    deadline = asyncio.get_running_loop().time() + total_s
    try:
        while (event := await _next_before(events, deadline, total_s)) is not None:
            yield event
    finally:
        await events.aclose()


async def _next_before(
    events: AsyncGenerator[StreamEvent, None], deadline: float, total_s: float
) -> StreamEvent | None:
    """The next event, or None at the end. The deadline's scope is opened per event
    rather than around the whole loop: open across a `yield`, its cancellation would
    land in whatever the consumer happens to await in between."""
    scope = asyncio.timeout_at(deadline)
    try:
        async with scope:
            return await anext(events, None)
    except TimeoutError:
        if not scope.expired():
            raise  # the stream's own timeout (httpx's idle limit), not this deadline
        raise TotalTimeExceeded(f"the attempt took more than {total_s:g} s") from None
