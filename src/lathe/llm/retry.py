"""The one retry policy for model calls; providers never retry by themselves.

Retryable errors (`ProviderError.retryable`: RateLimited, Overloaded, Transport) re-open
the stream after a wait: the server's Retry-After when it gave one (at most
`max_delay_s`), else exponential
backoff (`base_delay_s * 2**(n-1)` after the n-th failed attempt, at most `max_delay_s`)
spread by ± `jitter` so that many sessions hitting one limit do not return in step.
Everything else (ContextTooLong, AuthError, BadRequest) is raised at once: waiting would
not change the answer.

NothingListening (this machine refused the connection) is retryable but gets its own
short budget: `local_refused_attempts` refusals in a row, `local_refused_wait_s` apart
(2 attempts, 1 s: about a second in all, where the usual backoff spends ~15 s). The
kernel's refusal is immediate and certain; the one retry covers a local server caught
between restarts, and anything slower to come back (a model still loading answers 503,
which is Overloaded) is not helped by waiting longer here.
"""

from __future__ import annotations

import asyncio
import random
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass

from lathe.errors import NothingListening, ProviderError
from lathe.llm.base import StreamEvent
from lathe.plural import plural

_DAY_S = 24 * 3600

OnRetry = Callable[[int, int, float, ProviderError], object]


@dataclass(frozen=True)
class RetryPolicy:
    max_attempts: int = 5  # attempts in all, the first one included
    base_delay_s: float = 1.0
    max_delay_s: float = 30.0
    jitter: float = 0.25  # fraction of the backoff added or taken away at random
    max_retry_after_s: float = 120.0  # a server asking for a longer wait is not waited for
    local_refused_attempts: int = 2  # NothingListening attempts in a row, the first included
    local_refused_wait_s: float = 1.0  # the wait between them (no backoff, no jitter)

    def backoff_s(self, failed_attempt: int, rand: float) -> float:
        """The wait after attempt `failed_attempt` (1-based) failed; `rand` in [0, 1)."""
        delay = min(self.base_delay_s * 2 ** (failed_attempt - 1), self.max_delay_s)
        spread = delay * self.jitter * (2 * rand - 1)
        return max(0.0, min(delay + spread, self.max_delay_s))


async def stream_with_retry(
    open_stream: Callable[[], AsyncIterator[StreamEvent]],
    policy: RetryPolicy,
    on_retry: OnRetry | None = None,
    sleep: Callable[[float], Awaitable[object]] = asyncio.sleep,
    *,
    rand: Callable[[], float] = random.random,
) -> AsyncIterator[StreamEvent]:
    """Yield the events of `open_stream()`, re-opening it after retryable errors.

    Before each wait, `on_retry(attempt, max_attempts, wait_s, error)` is called, where
    `attempt` is the 1-based number of the attempt that just failed with `error` and
    `max_attempts` the most there will be as things stand (fewer once nothing listens),
    so a face can say "attempt 1/5 failed: ...; retrying in 1.0s".

    Deltas from an attempt that failed midway have already been yielded when the stream
    is re-opened, so a consumer may see the start of a reply twice. That is fine: deltas
    are for display, and the consumer keeps only the `Completed` message, which comes
    from the one attempt that finished.

    Every error raised has `retries` set to the retries made before it. A retryable one
    is raised (same type, status and request id; the message saying how many attempts
    were made) once `policy.max_attempts` are spent (or the short budget of
    NothingListening), or at once when the server asks to wait longer than
    `policy.max_retry_after_s`; any other is raised as it came.
    """
    attempt = 1
    refusals = 0  # NothingListening in a row
    while True:
        try:
            async for event in open_stream():
                yield event
            return
        except ProviderError as error:
            if not error.retryable:
                error.retries = attempt - 1
                raise
            refusals = refusals + 1 if isinstance(error, NothingListening) else 0
            limit = policy.max_attempts
            if refusals:
                limit = min(limit, attempt - refusals + policy.local_refused_attempts)
            if attempt >= limit:
                gave_up = f"{error} (gave up after {plural(attempt, 'attempt')})"
                raise error.reworded(gave_up, retries=attempt - 1) from error
            if refusals:
                wait_s = policy.local_refused_wait_s
            else:
                wait_s = _wait_s(error, attempt, policy, rand)
            if on_retry is not None:
                on_retry(attempt, limit, wait_s, error)
            await sleep(wait_s)
            attempt += 1


def _wait_s(
    error: ProviderError, failed_attempt: int, policy: RetryPolicy, rand: Callable[[], float]
) -> float:
    if error.retry_after is None:
        return policy.backoff_s(failed_attempt, rand())
    if error.retry_after > policy.max_retry_after_s:
        raise error.reworded(
            f"{error} (the server asked to wait {error.retry_after:.0f}s, more than the "
            f"{policy.max_retry_after_s:.0f}s lathe waits{_try_again_after(error.retry_after)})",
            retries=failed_attempt - 1,
        ) from error
    return min(max(error.retry_after, 0.0), policy.max_delay_s)


def _try_again_after(wait_s: float) -> str:
    """The end of the message saying when to try again (with the date when that is more
    than a day away: 07:28:00 alone reads as today); nothing when the clock cannot name
    that time (a wait of 1e20 s overflowed it, and the run ended in a traceback)."""
    shape = "%H:%M:%S" if wait_s <= _DAY_S else "%Y-%m-%d %H:%M:%S"
    try:
        when = time.strftime(shape, time.localtime(time.time() + wait_s))
    except (OverflowError, OSError, ValueError):
        return ""
    return f"; try again after {when}"
