"""`lathe run` against an endpoint that answers 200 with something that is no model's
reply: a network's login page, another API's JSON, text that is not JSON. It is said at
once, naming the content type and the start of the body (the base URL or a proxy is
wrong, which no retry fixes). It had been "the stream ended before the model finished
...; the connection was probably cut", after five attempts and ~15 s.

A server that ignores `stream: true` and answers one JSON completion is still read as a
reply (OpenAI's chat completion, and Anthropic's message)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from tests.fakes import anthropic_server as claude
from tests.fakes.anthropic_server import FakeAnthropicServer, _AnthropicHandler
from tests.fakes.openai_server import FakeOpenAIServer, Reply, _Handler


@dataclass(frozen=True)
class Raw:
    """A reply sent as it is: status, content type and body."""

    content_type: str
    body: str
    status: int = 200


def _send(handler, item: Raw) -> None:
    data = item.body.encode()
    handler.send_response(item.status)
    handler.send_header("Content-Type", item.content_type)
    handler.send_header("Content-Length", str(len(data)))
    handler.end_headers()
    handler.wfile.write(data)
    handler.wfile.flush()


class _RawOpenAI(_Handler):
    def _serve(self, item, request):
        if isinstance(item, Raw):
            return _send(self, item)
        return super()._serve(item, request)


class _RawAnthropic(_AnthropicHandler):
    def _serve_item(self, item, request):
        if isinstance(item, Raw):
            return _send(self, item)
        return super()._serve_item(item, request)


@pytest.fixture
def openai_raw() -> Iterator[FakeOpenAIServer]:
    server = FakeOpenAIServer()
    server.handler = _RawOpenAI
    with server:
        yield server


@pytest.fixture
def anthropic_raw() -> Iterator[FakeAnthropicServer]:
    server = FakeAnthropicServer()
    server.handler = _RawAnthropic
    with server:
        yield server


def _lathe(tmp_path: Path, base_url: str, *args: str) -> subprocess.CompletedProcess:
    ws = tmp_path / "ws"
    ws.mkdir(exist_ok=True)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("LATHE_", "OPENAI_"))}
    env.update(OPENAI_API_KEY="sk-test", ANTHROPIC_API_KEY="sk-ant-test")
    env.update(LATHE_HOME=str(tmp_path / "home"))
    return subprocess.run(
        [sys.executable, "-m", "lathe", "run", "--json", "--model", "m", "--base-url",
         base_url, "-C", str(ws), *args, "say hi"],
        cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120,
        stdin=subprocess.DEVNULL,
    )  # fmt: skip


def _finished(result: subprocess.CompletedProcess) -> dict:
    events = [json.loads(line) for line in result.stdout.splitlines()]
    assert events and events[-1]["type"] == "run_finished", result.stderr
    return events[-1]


def _assert_said_at_once(result: subprocess.CompletedProcess, *named: str) -> None:
    assert result.returncode == 3, result.stderr
    finished = _finished(result)
    assert finished["status"] == "provider_error"
    error = finished["error"]
    assert error["kind"] == "bad_request" and error["retries"] == 0, error
    message = error["message"]
    assert "not a model's reply" in message, message
    assert "connection was probably cut" not in message
    for words in named:
        assert words in message, message


LOGIN_PAGE = Raw("text/html", "<html><body>Please log in to the hotel wifi</body></html>")


@pytest.mark.parametrize(
    ("item", "named"),
    [
        (LOGIN_PAGE, ["text/html", "Please log in to the hotel wifi"]),
        (Raw("application/json", '{"choices": []}'), ["application/json", '{"choices": []}']),
        (Raw("application/json", "not json at all"), ["application/json", "not json at all"]),
        (Raw("application/json", "[1, 2, 3]"), ["application/json", "[1, 2, 3]"]),
        (Raw("text/plain", ""), ["text/plain", "an empty body"]),
    ],
    ids=["html", "no-choices", "not-json", "a-list", "empty"],
)
def test_openai_endpoint_answering_no_model_reply_is_said_at_once(
    tmp_path, openai_raw, item, named
):
    openai_raw.enqueue(item, item)

    result = _lathe(tmp_path, openai_raw.base_url)

    _assert_said_at_once(result, *named)
    assert len(openai_raw.chat_bodies()) == 1


@pytest.mark.parametrize(
    ("item", "named"),
    [
        (Raw("text/html", "<html>login to wifi</html>"), ["text/html", "login to wifi"]),
        (Raw("application/json", '{"foo": 1}'), ["application/json", '{"foo": 1}']),
        (Raw("application/json", "garbage"), ["application/json", "garbage"]),
    ],
    ids=["html", "other-json", "not-json"],
)
def test_anthropic_endpoint_answering_no_model_reply_is_said_at_once(
    tmp_path, anthropic_raw, item, named
):
    anthropic_raw.enqueue(item, item)

    result = _lathe(tmp_path, anthropic_raw.base_url, "-c", "models.m.provider=anthropic")

    _assert_said_at_once(result, *named)
    assert len(anthropic_raw.message_bodies()) == 1


def test_openai_completion_in_one_json_body_is_still_a_reply(tmp_path, openai_raw):
    openai_raw.enqueue(Reply("Hello from one body.", stream=False))

    result = _lathe(tmp_path, openai_raw.base_url)

    assert result.returncode == 0, result.stderr
    assert _finished(result)["answer"] == "Hello from one body."


def test_anthropic_message_in_one_json_body_is_a_reply(tmp_path, anthropic_raw):
    message = {
        "id": "msg_1", "type": "message", "role": "assistant", "model": "m",
        "content": [{"type": "text", "text": "Hello from one body."}],
        "stop_reason": "end_turn", "stop_sequence": None,
        "usage": {"input_tokens": 30, "output_tokens": 5},
    }  # fmt: skip
    anthropic_raw.enqueue(Raw("application/json", json.dumps(message)))

    result = _lathe(tmp_path, anthropic_raw.base_url, "-c", "models.m.provider=anthropic")

    assert result.returncode == 0, result.stderr
    finished = _finished(result)
    assert finished["answer"] == "Hello from one body."
    assert finished["usage"]["input_tokens"] == 30


def test_anthropic_error_in_one_json_body_is_mapped_as_its_type_says(tmp_path, anthropic_raw):
    error = {"type": "error", "error": {"type": "authentication_error", "message": "bad key"}}
    anthropic_raw.enqueue(Raw("application/json", json.dumps(error)))

    result = _lathe(tmp_path, anthropic_raw.base_url, "-c", "models.m.provider=anthropic")

    assert result.returncode == 3, result.stderr
    assert _finished(result)["error"]["kind"] == "auth"
    assert len(anthropic_raw.message_bodies()) == 1


def test_the_fake_anthropic_reply_still_streams(tmp_path, anthropic_raw):
    anthropic_raw.enqueue(claude.Reply("Streamed as ever."))

    result = _lathe(tmp_path, anthropic_raw.base_url, "-c", "models.m.provider=anthropic")

    assert result.returncode == 0, result.stderr
    assert _finished(result)["answer"] == "Streamed as ever."


def _events(*payloads: dict) -> str:
    return "".join(f"data: {json.dumps(p)}\n\n" for p in payloads)


ANTHROPIC_STREAM = _events(
    {"type": "message_start", "message": {"id": "msg_1", "model": "m", "usage": {}}},
    {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "hi"}},
    {"type": "message_stop"},
)


def test_openai_endpoint_streaming_another_apis_events_is_said_at_once(tmp_path, openai_raw):
    # An Anthropic-style server behind an OpenAI base URL: the stream has events, none a
    # chat completion chunk. It read as "the connection was probably cut", five times.
    item = Raw("text/event-stream", ANTHROPIC_STREAM)
    openai_raw.enqueue(item, item)

    result = _lathe(tmp_path, openai_raw.base_url)

    _assert_said_at_once(result, "text/event-stream", '"message_start"')
    assert len(openai_raw.chat_bodies()) == 1


def test_a_chat_stream_cut_before_its_end_is_still_a_cut_connection(tmp_path, openai_raw):
    cut = _events({"id": "c1", "model": "m", "choices": [{"index": 0, "delta": {"content": "h"}}]})
    openai_raw.enqueue(*[Raw("text/event-stream", cut)] * 6)

    result = _lathe(tmp_path, openai_raw.base_url, "-c", "retry.max_attempts=2")

    assert result.returncode == 3, result.stderr
    assert "connection was probably cut" in _finished(result)["error"]["message"]
