"""AnthropicProvider's failures against the fake server over real HTTP: every fault of
issue 4 is a lathe ProviderError of the right kind, with a message that helps and holds
no secret; the retry policy recovers from the transient ones."""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import replace

import pytest
from tests.fakes.anthropic_server import (
    ErrorReply,
    FakeAnthropicServer,
    Reply,
    ToolUse,
    not_found,
    prompt_too_long,
    rate_limited,
    server_error,
    unauthorized,
)
from tests.llm.provider_support import HELLO, QUICK, SECRET, failure, run

from lathe.errors import (
    AuthError,
    BadRequest,
    ContextTooLong,
    Overloaded,
    RateLimited,
    Transport,
)
from lathe.llm.anthropic import AnthropicProvider
from lathe.llm.base import Completed
from lathe.llm.retry import RetryPolicy, stream_with_retry
from lathe.types import ToolCall


@pytest.fixture
async def claude(fake_anthropic: FakeAnthropicServer) -> AsyncIterator[AnthropicProvider]:
    p = AnthropicProvider("fake-claude", fake_anthropic.base_url, SECRET, timeouts=QUICK)
    yield p
    await p.aclose()


@pytest.mark.parametrize(
    ("headers", "expected"),
    [({"Retry-After": "7"}, 7.0), ({"retry-after-ms": "250"}, 0.25), ({}, None)],
)
async def test_429_is_rate_limited_with_retry_after(fake_anthropic, claude, headers, expected):
    fake_anthropic.enqueue(rate_limited(retry_after=None, **headers))

    error = await failure(claude)

    assert type(error) is RateLimited
    assert error.retry_after == expected
    assert "429" in str(error) and "rate limit" in str(error)


@pytest.mark.parametrize("status", [500, 502, 503, 504, 529])
async def test_server_errors_and_overloaded_are_retryable_overloaded(
    fake_anthropic, claude, status
):
    fake_anthropic.enqueue(server_error(status, retry_after="3"))

    error = await failure(claude)

    assert type(error) is Overloaded
    assert error.retryable
    assert error.retry_after == 3.0
    assert f"HTTP {status}" in str(error)


async def test_a_stream_cut_mid_event_is_transport(fake_anthropic, claude):
    fake_anthropic.enqueue(Reply("this reply will not finish", text_chunk=3, cut_after=4))

    error = await failure(claude)

    assert type(error) is Transport
    assert "cut" in str(error)


async def test_a_stream_that_ends_without_message_stop_is_transport(fake_anthropic, claude):
    fake_anthropic.enqueue(Reply("almost", message_stop=False))

    error = await failure(claude)

    assert type(error) is Transport
    assert "no message_stop" in str(error)


@pytest.mark.parametrize(
    ("kind", "expected"),
    [
        ("overloaded_error", Overloaded),
        ("api_error", Overloaded),
        ("rate_limit_error", RateLimited),
        ("invalid_request_error", BadRequest),
    ],
)
async def test_an_error_event_mid_stream_is_the_matching_error(
    fake_anthropic, claude, kind, expected
):
    fake_anthropic.enqueue(Reply("partial answer", error=(kind, "Something broke"), error_after=4))

    error = await failure(claude)

    assert type(error) is expected
    assert kind in str(error) and "mid-stream" in str(error)


async def test_a_prompt_too_long_error_event_mid_stream_is_context_too_long(fake_anthropic, claude):
    fake_anthropic.enqueue(
        Reply(error=("invalid_request_error", "prompt is too long: 201000 tokens > 200000"))
    )

    assert type(await failure(claude)) is ContextTooLong


async def test_malformed_tool_input_reaches_the_loop_as_raw_arguments(fake_anthropic, claude):
    fake_anthropic.enqueue(Reply(calls=[ToolUse("edit", '{"path": "a.py", "old', id="toolu_x")]))

    _, message = await run(claude)

    assert message.tool_calls == (
        ToolCall(id="toolu_x", name="edit", arguments='{"path": "a.py", "old'),
    )


@pytest.mark.parametrize("status", [401, 403])
async def test_auth_failures_name_the_variable_and_never_the_key(fake_anthropic, status):
    provider = AnthropicProvider(
        "fake-claude", fake_anthropic.base_url, SECRET, api_key_env="ANTHROPIC_API_KEY"
    )
    fake_anthropic.enqueue(
        ErrorReply(status, f"invalid x-api-key {SECRET}", "authentication_error")
    )
    try:
        error = await failure(provider)
    finally:
        await provider.aclose()

    assert type(error) is AuthError
    assert not error.retryable
    assert "ANTHROPIC_API_KEY" in str(error)
    assert SECRET not in str(error)
    assert error.__cause__ is None and error.__context__ is None  # no SDK text riding along


async def test_a_missing_key_says_to_set_the_variable(fake_anthropic):
    provider = AnthropicProvider("fake-claude", fake_anthropic.base_url, "", api_key_env="MY_KEY")
    fake_anthropic.enqueue(unauthorized())
    try:
        error = await failure(provider)
    finally:
        await provider.aclose()

    assert type(error) is AuthError
    assert "none is set; set MY_KEY" in str(error)


async def test_prompt_too_long_is_context_too_long(fake_anthropic, claude):
    fake_anthropic.enqueue(prompt_too_long())

    error = await failure(claude)

    assert type(error) is ContextTooLong
    assert "prompt is too long" in str(error)


@pytest.mark.parametrize(
    "reply",
    [
        ErrorReply(400, "messages.1: roles must alternate", "invalid_request_error"),
        ErrorReply(413, "Request exceeds the maximum allowed number of bytes", "request_too_large"),
        not_found(),
    ],
)
async def test_other_refusals_are_bad_requests(fake_anthropic, claude, reply):
    fake_anthropic.enqueue(reply)

    error = await failure(claude)

    assert type(error) is BadRequest
    assert f"HTTP {reply.status}" in str(error)


async def test_the_retry_policy_recovers_from_transient_faults(fake_anthropic, claude):
    fake_anthropic.enqueue(
        rate_limited(retry_after="0"),
        server_error(529),
        Reply("cut short", cut_after=3),
        Reply("partial", error=("overloaded_error", "Overloaded")),
        Reply("finally"),
    )
    retries: list[str] = []

    async def no_sleep(_: float) -> None:
        return None

    events = [
        e
        async for e in stream_with_retry(
            lambda: claude.stream(HELLO),
            RetryPolicy(max_attempts=5),
            lambda attempt, total, wait, error: retries.append(type(error).__name__),
            no_sleep,
        )
    ]

    assert retries == ["RateLimited", "Overloaded", "Transport", "Overloaded"]
    assert isinstance(events[-1], Completed) and events[-1].message.text == "finally"


@pytest.mark.parametrize(
    ("reply", "expected"),
    [
        (unauthorized(), AuthError),
        (rate_limited(retry_after="3"), RateLimited),
        (server_error(529), Overloaded),
        (not_found(), BadRequest),
    ],
)
async def test_an_error_keeps_the_status_and_the_request_id(
    fake_anthropic, claude, reply, expected
):
    fake_anthropic.enqueue(replace(reply, headers={**reply.headers, "request-id": "req_011abc"}))

    error = await failure(claude)

    assert type(error) is expected
    assert (error.status, error.request_id) == (reply.status, "req_011abc")


async def test_an_error_event_mid_stream_has_no_http_status(fake_anthropic, claude):
    fake_anthropic.enqueue(Reply("partial", error=("overloaded_error", "Overloaded")))

    error = await failure(claude)

    assert type(error) is Overloaded
    assert error.status is None


@pytest.mark.parametrize(
    ("kind", "expected", "words"),
    [
        ("billing_error", BadRequest, "quota is used up"),
        ("authentication_error", AuthError, "the API key was rejected"),
    ],
)
async def test_an_error_event_that_no_wait_can_cure_says_so(
    fake_anthropic, claude, kind, expected, words
):
    # A billing_error event was "refused the request", unlike the 402 it stands for.
    fake_anthropic.enqueue(Reply(error=(kind, "Your credit balance is too low")))

    error = await failure(claude)

    assert type(error) is expected and words in str(error)
    assert error.status is None  # the server answered 200
