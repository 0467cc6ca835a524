"""A wait too long to make whose time the clock cannot name (1e20 s from now) is given
up as any other: the message leaves the date out, where `time.localtime` had raised
OverflowError through the run. The parse caps such a header first
(tests/e2e/test_retry_after_past_the_clock.py); this is the retry policy alone, for an
error that carries the wait as given."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from lathe.errors import RateLimited
from lathe.llm.base import StreamEvent
from lathe.llm.retry import RetryPolicy, stream_with_retry


@pytest.mark.parametrize("wait_s", [1e20, 9.3e18])
async def test_a_wait_the_clock_cannot_name_is_given_up_without_its_date(wait_s):
    async def limited() -> AsyncIterator[StreamEvent]:
        raise RateLimited("rate limited by the server", retry_after=wait_s)
        yield  # pragma: no cover - makes this an async generator

    with pytest.raises(RateLimited) as caught:
        async for _ in stream_with_retry(limited, RetryPolicy()):
            pass

    message = str(caught.value)
    assert message.endswith("more than the 120s lathe waits)"), message
    assert caught.value.retries == 0
