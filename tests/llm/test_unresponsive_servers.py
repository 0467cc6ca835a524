"""Servers that accept and then say nothing, trickle, or are not there at all, against
both providers over real HTTP: each ends in a retryable Transport error, soon, whose one
line names the URL and the limit that was hit (or says nothing is listening).

Timing assertions are upper bounds far from the limits under test (a loaded machine
only makes things slower): they show which limit fired, not how precisely."""

from __future__ import annotations

import socket
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import pytest
from tests.fakes import anthropic_server, openai_server
from tests.fakes.openai_server import Hang, ScriptedServer
from tests.llm.provider_support import HELLO, SECRET

from lathe.errors import NothingListening, ProviderError, Transport
from lathe.llm.anthropic import AnthropicProvider
from lathe.llm.base import Completed, Provider, StreamEvent, TextDelta
from lathe.llm.errors_map import ErrorContext, to_provider_error
from lathe.llm.openai_chat import OpenAIChatProvider
from lathe.llm.timeouts import Timeouts

IDLE_KEY = "providers.fake.idle_timeout_s"
TOTAL_KEY = "providers.fake.timeout_s"


def limits(*, total_s: float, idle_s: float) -> Timeouts:
    return Timeouts(total_s=total_s, idle_s=idle_s, total_key=TOTAL_KEY, idle_key=IDLE_KEY)


@dataclass
class Wire:
    """One provider kind and its fake server, so each test runs against both."""

    server: ScriptedServer
    reply: Callable[..., Any]  # the fake's Reply
    build: Callable[[str, Timeouts], Provider]  # (base_url, timeouts) -> provider


_PROVIDERS: dict[str, Callable[[str, Timeouts], Provider]] = {
    "openai": lambda url, t: OpenAIChatProvider("fake-model", url, SECRET, timeouts=t),
    "anthropic": lambda url, t: AnthropicProvider("fake-claude", url, SECRET, timeouts=t),
}


@pytest.fixture(params=["openai", "anthropic"])
def wire(request: pytest.FixtureRequest) -> Wire:
    server = request.getfixturevalue(f"fake_{request.param}")
    fake = openai_server if request.param == "openai" else anthropic_server
    return Wire(server, fake.Reply, _PROVIDERS[request.param])


@pytest.fixture(params=["openai", "anthropic"])
def build(request: pytest.FixtureRequest) -> Callable[[str, Timeouts], Provider]:
    return _PROVIDERS[request.param]


async def outcome(
    provider: Provider,
) -> tuple[list[StreamEvent], ProviderError | None, float]:
    """The events the stream gave, the error it ended with (None: it completed) and how
    long it took; the provider is closed afterwards."""
    events: list[StreamEvent] = []
    started = time.monotonic()
    try:
        async for event in provider.stream(HELLO):
            events.append(event)
    except ProviderError as error:
        return events, error, time.monotonic() - started
    finally:
        await provider.aclose()
    return events, None, time.monotonic() - started


async def test_a_server_that_accepts_and_never_answers_hits_the_idle_limit(wire):
    wire.server.enqueue(Hang(60))
    provider = wire.build(wire.server.base_url, limits(total_s=60, idle_s=0.5))

    events, error, took = await outcome(provider)

    assert events == []
    assert type(error) is Transport and error.retryable
    assert str(error).startswith(f"no data from {wire.server.base_url} for 0.5 s ({IDLE_KEY})")
    assert "\n" not in str(error) and SECRET not in str(error)
    assert took < 30  # the idle limit fired, not the 60 s total


async def test_a_stream_that_stalls_midway_hits_the_idle_limit(wire):
    wire.server.enqueue(wire.reply("hello world", text_chunk=2, stall_after=4, stall_s=60))
    provider = wire.build(wire.server.base_url, limits(total_s=60, idle_s=0.5))

    events, error, took = await outcome(provider)

    assert events and all(isinstance(e, TextDelta) for e in events)  # it had begun
    assert type(error) is Transport
    assert f"for 0.5 s ({IDLE_KEY})" in str(error)
    assert took < 30


async def test_a_trickling_stream_hits_the_total_limit(wire):
    # A chunk every 0.1 s for ~20 s: never idle for long, but far over the total.
    wire.server.enqueue(wire.reply("x" * 200, text_chunk=1, trickle_s=0.1))
    provider = wire.build(wire.server.base_url, limits(total_s=1.5, idle_s=5))

    events, error, took = await outcome(provider)

    assert events, "some text arrived before the total ran out"
    assert type(error) is Transport and error.retryable
    assert str(error).startswith(
        f"the reply from {wire.server.base_url} took more than 1.5 s in all ({TOTAL_KEY})"
    )
    assert IDLE_KEY not in str(error)
    assert took < 10  # well before the ~20 s the whole reply would take


async def test_gaps_shorter_than_the_idle_limit_are_fine_however_many(wire):
    # ~15 chunks 0.1 s apart: half again the idle limit in all, never in one gap.
    wire.server.enqueue(wire.reply("hello world", text_chunk=1, trickle_s=0.1))
    provider = wire.build(wire.server.base_url, limits(total_s=60, idle_s=1.0))

    events, error, _ = await outcome(provider)

    assert error is None
    assert isinstance(events[-1], Completed) and events[-1].message.text == "hello world"


def closed_loopback_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


async def test_a_refused_loopback_connection_says_nothing_is_listening(build):
    url = f"http://127.0.0.1:{closed_loopback_port()}"  # as both providers name it
    provider = build(url, limits(total_s=60, idle_s=30))

    _, error, _ = await outcome(provider)

    assert isinstance(error, NothingListening) and isinstance(error, Transport)
    assert error.retryable
    assert str(error) == f"nothing is listening at {url}: start the server or fix the base URL"


@pytest.mark.parametrize(
    "url", ["http://localhost:9/v1", "http://[::1]:9/v1", "http://127.0.0.2:9"]
)
def test_every_loopback_spelling_counts_as_nothing_listening(url):
    import httpx2

    error = to_provider_error(httpx2.ConnectError("[Errno 111] Connection refused"), _ctx(url))

    assert type(error) is NothingListening
    assert f"nothing is listening at {url}" in str(error)


def test_a_refused_remote_connection_is_a_plain_transport_error():
    import httpx2

    url = "https://llm.example.com/v1"
    error = to_provider_error(httpx2.ConnectError("[Errno 111] Connection refused"), _ctx(url))

    assert type(error) is Transport  # the normal backoff: a remote server may be restarting
    assert f"could not connect to {url}: connection refused" in str(error)


def _ctx(base_url: str) -> ErrorContext:
    return ErrorContext("m", base_url, "OPENAI_API_KEY", SECRET, limits(total_s=60, idle_s=30))
