"""OpenAIChatProvider's failures against the fake server over real HTTP: every one is
a lathe ProviderError of the right kind, with a message that helps and holds no secret."""

from __future__ import annotations

import subprocess
import sys
import time
from dataclasses import replace
from email.utils import formatdate

import pytest
from tests.fakes.openai_server import (
    ErrorReply,
    Reply,
    context_too_long,
    not_found,
    rate_limited,
    server_error,
    unauthorized,
)
from tests.llm.provider_support import SECRET, failure

from lathe.errors import (
    AuthError,
    BadRequest,
    ContextTooLong,
    Overloaded,
    RateLimited,
    Transport,
)
from lathe.llm.openai_chat import OpenAIChatProvider


async def test_a_stream_cut_mid_message_is_a_transport_error(fake_openai, provider):
    fake_openai.enqueue(Reply("this reply will not finish", text_chunk=4, cut_after=3))

    error = await failure(provider)

    assert type(error) is Transport
    assert "cut" in str(error)


async def test_a_stream_without_finish_reason_is_a_transport_error(fake_openai, provider):
    fake_openai.enqueue(Reply("almost", finish_reason=None))

    error = await failure(provider)

    assert type(error) is Transport
    assert "the stream ended before the model finished" in str(error)


@pytest.mark.parametrize(
    ("headers", "expected"),
    [
        ({"Retry-After": "7"}, 7.0),
        ({"Retry-After": "1.5"}, 1.5),
        ({"retry-after-ms": "250"}, 0.25),
        ({}, None),
    ],
)
async def test_429_is_rate_limited_with_retry_after(fake_openai, provider, headers, expected):
    fake_openai.enqueue(rate_limited(retry_after=None, **headers))

    error = await failure(provider)

    assert type(error) is RateLimited
    assert error.retry_after == expected
    assert "429" in str(error)


async def test_retry_after_as_an_http_date(fake_openai, provider):

    fake_openai.enqueue(rate_limited(retry_after=formatdate(time.time() + 30, usegmt=True)))

    error = await failure(provider)

    assert type(error) is RateLimited
    assert 25 <= error.retry_after <= 31


@pytest.mark.parametrize("status", [500, 502, 503, 504, 529])
async def test_server_errors_are_overloaded(fake_openai, provider, status):
    fake_openai.enqueue(server_error(status))

    error = await failure(provider)

    assert type(error) is Overloaded
    assert f"HTTP {status}" in str(error)
    assert error.retry_after is None


async def test_503_with_retry_after_carries_it(fake_openai, provider):
    fake_openai.enqueue(server_error(503, retry_after="4"))

    error = await failure(provider)

    assert type(error) is Overloaded
    assert error.retry_after == 4.0


@pytest.mark.parametrize("status", [401, 403])
async def test_a_rejected_key_names_the_variable_and_never_the_key(fake_openai, status):
    fake_openai.enqueue(
        ErrorReply(status, f"Incorrect API key provided: {SECRET}", code="invalid_api_key")
    )
    provider = OpenAIChatProvider("m", fake_openai.base_url, SECRET, api_key_env="MY_LLM_KEY")

    error = await failure(provider)
    await provider.aclose()

    assert type(error) is AuthError
    assert "MY_LLM_KEY" in str(error)
    assert "rejected" in str(error) or "refused the API key" in str(error)
    assert SECRET not in str(error)
    assert SECRET not in repr(error.args)


async def test_no_key_set_says_so(fake_openai):
    fake_openai.enqueue(unauthorized())
    provider = OpenAIChatProvider("m", fake_openai.base_url, "")

    error = await failure(provider)
    await provider.aclose()

    assert type(error) is AuthError
    assert "none is set" in str(error)
    assert "OPENAI_API_KEY" in str(error)


async def test_server_messages_echoing_the_key_are_scrubbed(fake_openai, provider):
    fake_openai.enqueue(ErrorReply(400, f"bad header Bearer {SECRET}"))

    error = await failure(provider)

    assert type(error) is BadRequest
    assert SECRET not in str(error)
    assert "[redacted]" in str(error)


async def test_context_too_long(fake_openai, provider):
    fake_openai.enqueue(context_too_long())

    error = await failure(provider)

    assert type(error) is ContextTooLong
    assert "maximum context length is 8192" in str(error)
    assert (error.window_tokens, error.request_tokens) == (8192, 9000)


@pytest.mark.parametrize(
    ("status", "message", "sizes"),
    [
        (400, "prompt is too long: 210000 tokens > 200000 maximum", (200000, 210000)),
        (413, "the request exceeds the context window of this model", (None, None)),
        (400, "too many tokens in the input", (None, None)),
        # llama.cpp's llama-server, as measured with the local model
        (
            400,
            "request (9544 tokens) exceeds the available context size (8192 tokens)",
            (8192, 9544),
        ),
    ],
)
async def test_other_context_too_long_wordings(fake_openai, provider, status, message, sizes):
    fake_openai.enqueue(ErrorReply(status, message))

    error = await failure(provider)

    assert type(error) is ContextTooLong
    assert (error.window_tokens, error.request_tokens) == sizes


async def test_404_names_the_model_and_base_url(fake_openai, provider):
    fake_openai.enqueue(not_found("fake-model"))

    error = await failure(provider)

    assert type(error) is BadRequest
    assert "'fake-model'" in str(error)
    assert fake_openai.base_url in str(error)


async def test_other_4xx_is_a_bad_request_with_the_servers_message(fake_openai, provider):
    fake_openai.enqueue(ErrorReply(400, "Invalid schema for function 'read'"))

    error = await failure(provider)

    assert type(error) is BadRequest
    assert "Invalid schema for function 'read'" in str(error)


async def test_an_exhausted_script_fails_loudly(fake_openai, provider):
    error = await failure(provider)

    assert type(error) is Overloaded
    assert "the script ran out" in str(error)


@pytest.mark.parametrize(
    ("message", "expected"),
    [
        ("the engine is overloaded, try again", Overloaded),
        ("Rate limit reached for requests", RateLimited),
        ("This model's maximum context length is 8192 tokens", ContextTooLong),
    ],
)
async def test_an_error_reported_inside_the_stream_is_mapped_by_what_it_says(
    fake_openai, provider, message, expected
):
    fake_openai.enqueue(Reply("a partial answer", error_after=2, error=f"{message} {SECRET}"))

    error = await failure(provider)

    assert type(error) is expected
    assert message in str(error)
    assert SECRET not in str(error)


def test_importing_the_provider_imports_neither_the_sdk_nor_the_http_stack():
    code = (
        "import sys, lathe.llm.openai_chat, lathe.llm.retry, lathe.llm.errors_map; "
        "sys.exit(1 if {'openai', 'httpx2'} & set(sys.modules) else 0)"
    )
    assert subprocess.run([sys.executable, "-c", code]).returncode == 0


@pytest.mark.parametrize(
    ("reply", "expected"),
    [
        (unauthorized(), AuthError),
        (rate_limited(retry_after="3"), RateLimited),
        (server_error(502), Overloaded),
        (context_too_long(), ContextTooLong),
        (not_found(), BadRequest),
    ],
)
async def test_an_error_keeps_the_status_and_the_request_id(fake_openai, provider, reply, expected):
    fake_openai.enqueue(replace(reply, headers={**reply.headers, "X-Request-Id": "req_7f3e"}))

    error = await failure(provider)

    assert type(error) is expected
    assert (error.status, error.request_id) == (reply.status, "req_7f3e")


async def test_without_a_request_id_header_there_is_none(fake_openai, provider):
    fake_openai.enqueue(server_error(500))

    error = await failure(provider)

    assert (error.status, error.request_id) == (500, None)
