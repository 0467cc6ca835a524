"""stream_with_retry with an injected sleep, and once end to end with the real provider."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest
from hypothesis import given
from hypothesis import strategies as st
from tests.fakes.openai_server import Reply, rate_limited

from lathe.errors import (
    AuthError,
    BadRequest,
    ContextTooLong,
    NothingListening,
    Overloaded,
    ProviderError,
    RateLimited,
    Transport,
)
from lathe.llm.base import Completed, ModelRequest, StreamEvent, TextDelta
from lathe.llm.openai_chat import OpenAIChatProvider
from lathe.llm.retry import RetryPolicy, stream_with_retry
from lathe.llm.timeouts import Timeouts
from lathe.types import AssistantMessage, UserMessage

DONE = Completed(AssistantMessage(text="done"))


class Script:
    """open_stream for tests: each call plays the next outcome (an error or success)."""

    def __init__(self, *outcomes: ProviderError | None) -> None:
        self.outcomes = list(outcomes)
        self.opened = 0

    def __call__(self) -> AsyncIterator[StreamEvent]:
        self.opened += 1
        return self._play(self.outcomes.pop(0) if self.outcomes else None)

    async def _play(self, error: ProviderError | None) -> AsyncIterator[StreamEvent]:
        yield TextDelta(f"attempt {self.opened}")
        if error is not None:
            raise error
        yield DONE


class Sleeps(list):
    async def __call__(self, seconds: float) -> None:
        self.append(seconds)


async def drain(script: Script, policy: RetryPolicy, **kwargs) -> list[StreamEvent]:
    return [event async for event in stream_with_retry(script, policy, **kwargs)]


async def test_backoff_doubles_until_attempts_are_spent():
    script = Script(*[Overloaded("busy")] * 10)
    sleeps = Sleeps()

    with pytest.raises(Overloaded) as caught:
        await drain(script, RetryPolicy(max_attempts=5), sleep=sleeps, rand=lambda: 0.5)

    assert sleeps == [1.0, 2.0, 4.0, 8.0]
    assert script.opened == 5
    assert "gave up after 5 attempts" in str(caught.value)
    assert "busy" in str(caught.value)


async def test_backoff_is_capped_at_max_delay():
    script = Script(*[Transport("cut")] * 10)
    sleeps = Sleeps()
    policy = RetryPolicy(max_attempts=7, base_delay_s=2.0, max_delay_s=10.0)

    with pytest.raises(Transport):
        await drain(script, policy, sleep=sleeps, rand=lambda: 0.5)

    assert sleeps == [2.0, 4.0, 8.0, 10.0, 10.0, 10.0]


@given(
    attempt=st.integers(min_value=1, max_value=12),
    rand=st.floats(min_value=0.0, max_value=0.999999),
    jitter=st.floats(min_value=0.0, max_value=1.0),
)
def test_jitter_stays_within_its_fraction_and_the_cap(attempt, rand, jitter):
    policy = RetryPolicy(base_delay_s=1.0, max_delay_s=30.0, jitter=jitter)
    plain = min(2 ** (attempt - 1), 30.0)

    wait = policy.backoff_s(attempt, rand)

    assert plain * (1 - jitter) - 1e-9 <= wait <= min(plain * (1 + jitter), 30.0) + 1e-9


async def test_jitter_spreads_waits():
    sleeps = Sleeps()
    policy = RetryPolicy(max_attempts=3, jitter=0.5)
    randoms = iter([0.0, 0.999])

    with pytest.raises(Overloaded):
        await drain(
            Script(*[Overloaded("x")] * 3), policy, sleep=sleeps, rand=lambda: next(randoms)
        )

    assert sleeps[0] == pytest.approx(0.5)
    assert sleeps[1] == pytest.approx(2.0 * (1 + 0.5 * 0.998))


async def test_retry_after_is_honoured_instead_of_backoff():
    sleeps = Sleeps()
    script = Script(RateLimited("slow down", retry_after=7.0), Overloaded("x", retry_after=0.0))

    events = await drain(script, RetryPolicy(), sleep=sleeps, rand=lambda: 0.5)

    assert sleeps == [7.0, 0.0]
    assert events[-1] == DONE


async def test_retry_after_is_waited_no_longer_than_max_delay():
    # retry.max_delay_s is "the longest single wait, a server's Retry-After included":
    # with 1, a Retry-After of 8 was waited in full.
    sleeps = Sleeps()
    script = Script(RateLimited("slow down", retry_after=8.0))

    events = await drain(script, RetryPolicy(max_delay_s=1.0), sleep=sleeps, rand=lambda: 0.5)

    assert sleeps == [1.0]
    assert events[-1] == DONE


async def test_retry_after_beyond_the_limit_gives_up_at_once():
    sleeps = Sleeps()
    script = Script(RateLimited("quota", retry_after=3600.0))

    with pytest.raises(RateLimited) as caught:
        await drain(script, RetryPolicy(max_retry_after_s=120), sleep=sleeps)

    assert sleeps == []
    assert script.opened == 1
    assert "asked to wait 3600s" in str(caught.value)
    assert "try again after" in str(caught.value)
    assert caught.value.retry_after == 3600.0


@pytest.mark.parametrize(
    "error", [ContextTooLong("long"), AuthError("key"), BadRequest("bad"), ProviderError("?")]
)
async def test_non_retryable_errors_are_raised_unchanged_at_once(error):
    sleeps = Sleeps()
    calls = []
    script = Script(error)

    with pytest.raises(ProviderError) as caught:
        await drain(script, RetryPolicy(), sleep=sleeps, on_retry=lambda *a: calls.append(a))

    assert caught.value is error
    assert (script.opened, sleeps, calls) == (1, [], [])


async def test_on_retry_gets_the_failed_attempt_the_limit_the_wait_and_the_error():
    first, second = RateLimited("a", retry_after=3.0), Transport("b")
    calls = []

    events = await drain(
        Script(first, second),
        RetryPolicy(max_attempts=4),
        on_retry=lambda *args: calls.append(args),
        sleep=Sleeps(),
        rand=lambda: 0.5,
    )

    assert calls == [(1, 4, 3.0, first), (2, 4, 2.0, second)]
    assert events == [
        TextDelta("attempt 1"),
        TextDelta("attempt 2"),
        TextDelta("attempt 3"),
        DONE,
    ]


async def test_nothing_listening_gets_a_short_fixed_budget():
    refused = NothingListening("nothing is listening at http://127.0.0.1:9/v1")
    script = Script(*[refused] * 10)
    sleeps = Sleeps()
    calls = []

    with pytest.raises(NothingListening) as caught:
        await drain(
            script, RetryPolicy(), sleep=sleeps, on_retry=lambda *a: calls.append(a), rand=lambda: 0
        )

    assert script.opened == 2  # not the 5 attempts and ~15 s of backoff of other failures
    assert sleeps == [1.0]
    assert calls == [(1, 2, 1.0, refused)]
    assert str(caught.value) == f"{refused} (gave up after 2 attempts)"


async def test_a_server_that_stops_listening_midway_gets_the_short_budget_from_then():
    refused = NothingListening("nothing is listening")
    script = Script(Overloaded("busy"), refused, refused, refused)
    sleeps = Sleeps()
    calls = []

    with pytest.raises(NothingListening):
        await drain(
            script,
            RetryPolicy(base_delay_s=4.0),
            sleep=sleeps,
            on_retry=lambda *a: calls.append(a[:3]),
            rand=lambda: 0.5,
        )

    assert script.opened == 3
    assert sleeps == [4.0, 1.0]
    assert calls == [(1, 5, 4.0), (2, 3, 1.0)]  # the limit it now has, as it will be told


async def test_one_attempt_means_no_retry_for_nothing_listening_either():
    script = Script(*[NothingListening("nothing is listening")] * 3)

    with pytest.raises(NothingListening):
        await drain(script, RetryPolicy(max_attempts=1), sleep=Sleeps())

    assert script.opened == 1


async def test_success_first_time_never_sleeps():
    sleeps = Sleeps()

    events = await drain(Script(None), RetryPolicy(), sleep=sleeps)

    assert events == [TextDelta("attempt 1"), DONE]
    assert sleeps == []


async def test_429_then_a_good_reply_through_the_real_provider(fake_openai):
    fake_openai.enqueue(rate_limited(retry_after="0.01"), Reply("recovered"))
    provider = OpenAIChatProvider(
        "fake-model", fake_openai.base_url, "sk-x", timeouts=Timeouts(total_s=5, idle_s=5)
    )
    request = ModelRequest(system="", messages=[UserMessage(content="hi")], tools=[])
    retries = []
    sleeps = Sleeps()

    events = [
        event
        async for event in stream_with_retry(
            lambda: provider.stream(request),
            RetryPolicy(),
            on_retry=lambda *args: retries.append(args),
            sleep=sleeps,
        )
    ]
    await provider.aclose()

    assert isinstance(events[-1], Completed)
    assert events[-1].message.text == "recovered"
    assert sleeps == [0.01]
    [(attempt, limit, wait, error)] = retries
    assert (attempt, limit, wait, type(error)) == (1, 5, 0.01, RateLimited)
    assert len(fake_openai.chat_bodies()) == 2
    assert fake_openai.remaining == 0


async def test_the_error_that_ends_the_retries_counts_them_and_keeps_its_status():
    busy = Overloaded("busy", status=503, request_id="req_1")

    with pytest.raises(Overloaded) as caught:
        await drain(Script(busy, busy, busy), RetryPolicy(max_attempts=3), sleep=Sleeps())

    assert (caught.value.retries, caught.value.status, caught.value.request_id) == (2, 503, "req_1")
    assert "gave up after 3 attempts" in str(caught.value)


async def test_a_fatal_error_after_retries_counts_them():
    with pytest.raises(AuthError) as caught:
        await drain(Script(Transport("cut"), AuthError("key")), RetryPolicy(), sleep=Sleeps())

    assert caught.value.retries == 1
