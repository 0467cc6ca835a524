"""A scripted fake Anthropic Messages API server over real HTTP on 127.0.0.1.

The twin of `tests/fakes/openai_server.py`, sharing its HTTP plumbing (the threaded
server, the request recording, chunked writes, dropping a connection): the code under
test talks real HTTP and real SSE, in this process or in a `lathe` subprocess pointed at
`server.base_url` (which, like https://api.anthropic.com, has no `/v1`).

    with FakeAnthropicServer() as server:
        server.enqueue(
            Reply("Hello there"),                                    # streamed text
            Reply(thinking=[ThinkingBlock("hmm", "sig-1")],          # thinking + a call
                  calls=[ToolUse("read", {"path": "a.py"})], args_chunk=3),
            Reply(calls=[ToolUse("grep", '{"pattern": "x"')]),       # malformed input
            rate_limited(retry_after="2"),                           # 429 + Retry-After
            server_error(529),                                       # overloaded_error
            prompt_too_long(),
            Hang(10),                                                # outlive the timeout
            Reply("partial answer", cut_after=3),                    # cut inside event 4
            Reply("partial", error=("overloaded_error", "Overloaded")),  # SSE error event
        )
        server.message_bodies()[0]["system"]                         # what was received

Script items, served one per `POST /v1/messages` in order:

- `Reply` — a streamed message: thinking blocks (`ThinkingBlock`, `RedactedThinking`),
  then text, then tool_use blocks (`ToolUse`, whose str `input` is sent verbatim in
  `input_json_delta` chunks so malformed JSON can be scripted), the stop_reason, usage
  (message_start carries input and cache counts, message_delta the output count), and
  faults: `cut_after=n` writes n whole events and half of the next, then drops the
  connection; `error=(type, message)` sends an SSE `error` event after `error_after`
  events and ends the stream; `message_stop=False` ends cleanly without message_stop.
- `ErrorReply` — an HTTP error status with headers and an Anthropic error body
  (`{"type": "error", "error": {"type": ..., "message": ...}}`) or a raw body.
  Shorthands: `rate_limited`, `server_error` (529 is `overloaded_error`),
  `unauthorized`, `prompt_too_long`, `not_found`.
- `Hang(seconds)` (shared with the OpenAI fake) — answer nothing for that long.

`server.responder = fn(request_json) -> item` is asked once the queue is empty; with
neither, the server answers 500 saying the script ran out. With `strict = True` (the
default) a request the real API would refuse — no max_tokens, roles not alternating, a
first message not from the user, a tool_use not answered by a tool_result at the start
of the next user turn, an empty text block — gets the 400 the real API would send,
without consuming a script item, so tests catch a malformed conversation.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from tests.fakes.openai_server import Hang, ScriptedServer, _Handler, _route

AUTO = "auto"
DEFAULT_USAGE: Mapping[str, int] = {
    "input_tokens": 25,
    "output_tokens": 9,
    "cache_creation_input_tokens": 0,
    "cache_read_input_tokens": 0,
}


@dataclass(frozen=True)
class ThinkingBlock:
    text: str
    signature: str = "sig-fake"


@dataclass(frozen=True)
class RedactedThinking:
    data: str


@dataclass(frozen=True)
class ToolUse:
    """One tool_use block. A str `input` is streamed verbatim."""

    name: str
    input: str | Mapping[str, Any] = field(default_factory=dict)
    id: str | None = None  # None: "toolu_<position>"

    def input_text(self) -> str:
        return self.input if isinstance(self.input, str) else json.dumps(self.input)


@dataclass(frozen=True)
class Reply:
    text: str = ""
    calls: Sequence[ToolUse] = ()
    thinking: Sequence[ThinkingBlock | RedactedThinking] = ()
    stop_reason: str | None = AUTO  # AUTO: "tool_use" with calls, else "end_turn"
    usage: Mapping[str, int] = field(default_factory=lambda: dict(DEFAULT_USAGE))
    text_chunk: int = 4
    args_chunk: int = 8
    cut_after: int | None = None
    error: tuple[str, str] | None = None
    error_after: int = 2
    message_stop: bool = True
    model: str | None = None  # None: echo the requested model
    stall_after: int | None = None
    stall_s: float = 0.0
    trickle_s: float = 0.0
    # The stream's Content-Type; None: none sent (a proxy that drops or rewrites it).
    content_type: str | None = "text/event-stream"


@dataclass(frozen=True)
class ErrorReply:
    status: int
    message: str = "scripted error"
    type: str = "api_error"
    headers: Mapping[str, str] = field(default_factory=dict)
    raw_body: str | None = None

    def body(self) -> bytes:
        if self.raw_body is not None:
            return self.raw_body.encode()
        error = {"type": "error", "error": {"type": self.type, "message": self.message}}
        return json.dumps(error).encode()


Item = Reply | ErrorReply | Hang


def rate_limited(retry_after: str | None = "1", **headers: str) -> ErrorReply:
    all_headers = dict(headers)
    if retry_after is not None:
        all_headers["Retry-After"] = retry_after
    return ErrorReply(
        429,
        "Number of request tokens has exceeded your rate limit.",
        "rate_limit_error",
        all_headers,
    )


def server_error(status: int = 500, retry_after: str | None = None) -> ErrorReply:
    headers = {"Retry-After": retry_after} if retry_after is not None else {}
    if status == 529:
        return ErrorReply(529, "Overloaded", "overloaded_error", headers)
    return ErrorReply(status, f"Internal server error ({status})", "api_error", headers)


def unauthorized(status: int = 401) -> ErrorReply:
    kind = "authentication_error" if status == 401 else "permission_error"
    return ErrorReply(status, "invalid x-api-key", kind)


def prompt_too_long() -> ErrorReply:
    return ErrorReply(
        400, "prompt is too long: 215000 tokens > 200000 maximum", "invalid_request_error"
    )


def not_found(model: str = "fake-claude") -> ErrorReply:
    return ErrorReply(404, f"model: {model}", "not_found_error")


class FakeAnthropicServer(ScriptedServer):
    thread_name = "fake-anthropic"

    def __init__(self) -> None:
        super().__init__()
        self.strict = True
        self.handler = _AnthropicHandler

    def message_bodies(self) -> list[dict[str, Any]]:
        return [r.body for r in self.requests if _route(r.path).endswith("/v1/messages")]

    def _script_ran_out(self) -> Item:
        return ErrorReply(500, "fake server: the script ran out (no queued item and no responder)")


class _AnthropicHandler(_Handler):
    fake: FakeAnthropicServer  # type: ignore[assignment]

    def do_GET(self) -> None:
        self.fake._record(self._recorded(None))
        self._send_error(ErrorReply(404, f"no route for GET {self.path}", "not_found_error"))

    def do_POST(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b""
        try:
            body = json.loads(raw) if raw else None
        except json.JSONDecodeError:
            body = raw.decode(errors="replace")
        self.fake._record(self._recorded(body))
        if _route(self.path) != "/v1/messages":
            self._send_error(ErrorReply(404, f"no route for POST {self.path}", "not_found_error"))
            return
        if not isinstance(body, dict):
            self._send_error(
                ErrorReply(400, "the body is not a JSON object", "invalid_request_error")
            )
            return
        if self.fake.strict and (problem := request_problem(body)):
            self._send_error(ErrorReply(400, problem, "invalid_request_error"))
            return
        self._serve_item(self.fake._next_item(body), body)

    def _serve_item(self, item: Item, request: dict[str, Any]) -> None:
        match item:
            case ErrorReply():
                self._send_error(item)  # type: ignore[arg-type]  # same shape as OpenAI's
            case Hang(seconds=seconds):
                self.fake._stopping.wait(seconds)
                self._drop_connection()
            case Reply():
                self._send_events(item, request)
            case _:
                self._send_error(ErrorReply(500, f"fake server: unknown script item {item!r}"))

    def _send_events(self, reply: Reply, request: dict[str, Any]) -> None:
        self.send_response(200)
        if reply.content_type is not None:
            self.send_header("Content-Type", reply.content_type)
        self.send_header("Cache-Control", "no-cache")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        events = [_sse(e) for e in _events(reply, request)]
        if reply.cut_after is not None:
            for text in events[: reply.cut_after]:
                self._write_chunk(text)
            following = events[reply.cut_after] if reply.cut_after < len(events) else ""
            if following:
                self._write_chunk(following[: len(following) // 2])
            self._drop_connection()  # no terminating chunk: the body is incomplete
            return
        if reply.error is not None:
            kind, message = reply.error
            events = events[: reply.error_after]
            error = {"type": "error", "error": {"type": kind, "message": message}}
            events.append(_sse(error))
        for position, text in enumerate(events):
            self._pace(position, reply.stall_after, reply.stall_s, reply.trickle_s)
            self._write_chunk(text)
        self.wfile.write(b"0\r\n\r\n")
        self.wfile.flush()


# building the stream


def _sse(event: Mapping[str, Any]) -> str:
    return f"event: {event['type']}\ndata: {json.dumps(event)}\n\n"


def _pieces(text: str, size: int) -> list[str]:
    size = max(size, 1)
    return [text[i : i + size] for i in range(0, len(text), size)]


def _events(reply: Reply, request: dict[str, Any]) -> list[dict[str, Any]]:
    usage = dict(reply.usage)
    start_usage = {k: v for k, v in usage.items() if k != "output_tokens"}
    message = {
        "id": "msg_fake",
        "type": "message",
        "role": "assistant",
        "model": reply.model or request.get("model") or "fake-claude",
        "content": [],
        "stop_reason": None,
        "stop_sequence": None,
        "usage": {**start_usage, "output_tokens": 1},
    }
    events: list[dict[str, Any]] = [{"type": "message_start", "message": message}]
    events.append({"type": "ping"})
    index = 0

    def block(start: dict[str, Any], deltas: list[dict[str, Any]]) -> None:
        nonlocal index
        events.append({"type": "content_block_start", "index": index, "content_block": start})
        events.extend(
            {"type": "content_block_delta", "index": index, "delta": delta} for delta in deltas
        )
        events.append({"type": "content_block_stop", "index": index})
        index += 1

    for thought in reply.thinking:
        if isinstance(thought, RedactedThinking):
            block({"type": "redacted_thinking", "data": thought.data}, [])
            continue
        deltas = [
            {"type": "thinking_delta", "thinking": p}
            for p in _pieces(thought.text, reply.text_chunk)
        ]
        deltas.append({"type": "signature_delta", "signature": thought.signature})
        block({"type": "thinking", "thinking": "", "signature": ""}, deltas)
    if reply.text:
        deltas = [{"type": "text_delta", "text": p} for p in _pieces(reply.text, reply.text_chunk)]
        block({"type": "text", "text": ""}, deltas)
    for position, call in enumerate(reply.calls):
        start = {
            "type": "tool_use",
            "id": call.id or f"toolu_{position}",
            "name": call.name,
            "input": {},
        }
        deltas = [
            {"type": "input_json_delta", "partial_json": p}
            for p in _pieces(call.input_text(), reply.args_chunk)
        ]
        block(start, deltas)
    stop_reason = reply.stop_reason
    if stop_reason == AUTO:
        stop_reason = "tool_use" if reply.calls else "end_turn"
    events.append(
        {
            "type": "message_delta",
            "delta": {"stop_reason": stop_reason, "stop_sequence": None},
            "usage": {"output_tokens": usage.get("output_tokens", 0)},
        }
    )
    if reply.message_stop:
        events.append({"type": "message_stop"})
    return events


# what the real API refuses


def request_problem(body: Mapping[str, Any]) -> str | None:
    """Why the real Messages API would answer 400 to this body, or None."""
    if not isinstance(body.get("max_tokens"), int):
        return "max_tokens: Field required"
    messages = body.get("messages")
    if not isinstance(messages, list) or not messages:
        return "messages: at least one message is required"
    open_calls: list[str] = []
    for i, message in enumerate(messages):
        role = message.get("role")
        if i == 0 and role != "user":
            return "messages: first message must use the user role"
        if i > 0 and role == messages[i - 1].get("role"):
            return f"messages.{i}: roles must alternate between user and assistant"
        content = message.get("content")
        blocks = [{"type": "text", "text": content}] if isinstance(content, str) else content
        if not blocks:
            return f"messages.{i}: content must not be empty"
        answered = [b.get("tool_use_id") for b in blocks if b.get("type") == "tool_result"]
        leading = 0
        while leading < len(blocks) and blocks[leading].get("type") == "tool_result":
            leading += 1
        if len(answered) != leading:
            return f"messages.{i}: tool_result blocks must come first in the user turn"
        if open_calls and sorted(answered) != sorted(open_calls):
            return (
                f"messages.{i}: tool_use ids {open_calls} were found without tool_result "
                "blocks immediately after"
            )
        if answered and not open_calls:
            return f"messages.{i}: unexpected tool_use_id found in tool_result blocks"
        for b in blocks:
            if b.get("type") == "text" and not b.get("text"):
                return f"messages.{i}: text content blocks must be non-empty"
        open_calls = [b["id"] for b in blocks if b.get("type") == "tool_use"]
    return None
