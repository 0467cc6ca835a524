"""A scripted fake OpenAI-compatible server over real HTTP on 127.0.0.1.

It runs a stdlib `ThreadingHTTPServer` on a free port in a background thread, so the
code under test talks real HTTP and real SSE to it, whether that code runs in this
process or in a `lathe` subprocess pointed at `server.base_url`.

    with FakeOpenAIServer() as server:          # or server.start() ... server.stop()
        server.enqueue(
            Reply("Hello there"),                                   # streamed text
            Reply(calls=[Call("read", {"path": "a.py"}),            # two tool calls,
                         Call("grep", '{"pattern": "x"')],          # one malformed
                  interleave=True, args_chunk=3),
            rate_limited(retry_after="2"),                          # 429 + Retry-After
            server_error(503),
            context_too_long(),
            Hang(10),                                               # outlive the timeout
            Reply("partial answer", cut_after=3),                   # cut mid-stream
            Reply("partial", error_after=2, error="overloaded"),     # error mid-stream
            Reply("slow", stall_after=2, stall_s=30),               # stall mid-stream
            Reply("a b c d", trickle_s=0.5),                        # a chunk every 0.5 s
        )
        client_base_url = server.base_url                           # ".../v1"
        ...
        server.requests[0].body["messages"]                         # what was received

Script items, served one per POST /v1/chat/completions in order:

- `Reply` — a model reply: text, reasoning (`reasoning_content` deltas), tool calls
  (`Call`, whose `arguments` string is sent verbatim so malformed JSON can be scripted),
  usage, finish_reason, how text and arguments are chunked across deltas, whether calls
  interleave, whether `index` is omitted, SSE or a plain JSON body, whether usage is sent
  (only when the request asks with stream_options, always, or never), whether [DONE] is
  sent, and `cut_after=n` to close the connection after n chunks without a
  finish_reason or [DONE]; `error_after=n, error=message` sends n chunks, then the error
  as the next event (`data: {"error": {"message": ...}}`, as vLLM and OpenRouter report
  a failure once the stream has begun; a mapping `error` is sent as the whole error
  object, code and type included) and ends the stream. Pacing:
  `stall_after=n, stall_s=s` sends the headers and n chunks, then nothing for s seconds
  (or until the server stops), then the rest;
  `trickle_s=s` waits s seconds before every chunk after the first, so each gap is short
  but the whole reply is slow.
- `ErrorReply` — an HTTP error status with headers and an OpenAI-style error body (or a
  raw body). Shorthands: `rate_limited`, `server_error`, `unauthorized`,
  `context_too_long`, `not_found`.
- `Hang(seconds)` — accept the request and answer nothing for that long (or until the
  server stops), then close the connection.

Dynamic scripts: `server.responder = fn(request_json) -> item` is called for each chat
request once the queue is empty, so end-to-end tests can react to what the agent sent.
With neither a queued item nor a responder, the server answers 500 with a body saying
the script ran out, so a test fails loudly instead of hanging.

Server-wide behaviour: `reject_stream_options = True` makes every request carrying
`stream_options` fail with 400 (as some servers do) without consuming a script item.
`GET /v1/models` lists `server.models`. Every request is recorded in `server.requests`
(method, path, lower-cased headers, parsed JSON body, the client's port: one port
for several requests means they shared a kept-alive connection); `server.chat_bodies()` gives the
bodies of the chat requests and `server.remaining` the number of unserved items.
"""

from __future__ import annotations

import json
import socket
import threading
import time
from collections import deque
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Literal, Self
from urllib.parse import urlsplit

AUTO = "auto"
DEFAULT_USAGE: Mapping[str, int] = {"prompt_tokens": 12, "completion_tokens": 7, "total_tokens": 19}


@dataclass(frozen=True)
class Call:
    """One tool call in a scripted reply. A str `arguments` is sent verbatim."""

    name: str
    arguments: str | Mapping[str, Any] = "{}"
    id: str | None = None  # None: "call_<position>"

    def arguments_text(self) -> str:
        if isinstance(self.arguments, str):
            return self.arguments
        return json.dumps(self.arguments)


@dataclass(frozen=True)
class Reply:
    text: str = ""
    calls: Sequence[Call] = ()
    reasoning: str = ""
    # AUTO: "tool_calls" when there are calls, else "stop"; None: never sent.
    finish_reason: str | None = AUTO
    usage: Mapping[str, Any] | None = field(default_factory=lambda: dict(DEFAULT_USAGE))
    usage_when: Literal["requested", "always", "never"] = "requested"
    text_chunk: int = 4
    args_chunk: int = 8
    interleave: bool = False
    omit_index: bool = False
    stream: bool | None = None  # None: as the request asks; False: one JSON body
    cut_after: int | None = None
    error_after: int | None = None
    error: str | Mapping[str, Any] = "scripted mid-stream error"
    done: bool = True
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
    type: str | None = None
    code: str | None = None
    headers: Mapping[str, str] = field(default_factory=dict)
    raw_body: str | None = None  # sent instead of the JSON error object when given

    def body(self) -> bytes:
        if self.raw_body is not None:
            return self.raw_body.encode()
        error = {"message": self.message, "type": self.type, "param": None, "code": self.code}
        return json.dumps({"error": error}).encode()


@dataclass(frozen=True)
class Hang:
    seconds: float


Item = Reply | ErrorReply | Hang


def rate_limited(retry_after: str | None = "1", **headers: str) -> ErrorReply:
    all_headers = dict(headers)
    if retry_after is not None:
        all_headers["Retry-After"] = retry_after
    return ErrorReply(
        429, "Rate limit reached; slow down.", "requests", "rate_limit_exceeded", all_headers
    )


def server_error(status: int = 500, retry_after: str | None = None) -> ErrorReply:
    headers = {"Retry-After": retry_after} if retry_after is not None else {}
    return ErrorReply(status, f"The server had an error ({status}).", "server_error", None, headers)


def unauthorized(status: int = 401) -> ErrorReply:
    return ErrorReply(
        status, "Incorrect API key provided.", "invalid_request_error", "invalid_api_key"
    )


def context_too_long() -> ErrorReply:
    return ErrorReply(
        400,
        "This model's maximum context length is 8192 tokens. However, your messages "
        "resulted in 9000 tokens. Please reduce the length of the messages.",
        "invalid_request_error",
        "context_length_exceeded",
    )


def not_found(model: str = "fake-model") -> ErrorReply:
    return ErrorReply(
        404, f"The model `{model}` does not exist.", "invalid_request_error", "model_not_found"
    )


@dataclass(frozen=True)
class RecordedRequest:
    method: str
    path: str
    headers: dict[str, str]
    body: Any
    client_port: int = 0


class ScriptedServer:
    """What every fake model server shares: a background HTTP server on a free
    127.0.0.1 port, a queue of script items (then `responder`), and the record of every
    request. Subclasses name their handler, thread and URL suffix, and what to answer
    when the script runs out."""

    handler: type[BaseHTTPRequestHandler]
    thread_name = "fake-server"
    url_suffix = ""

    def __init__(self) -> None:
        self.responder: Callable[[dict[str, Any]], Any] | None = None
        self._queue: deque[Any] = deque()
        self._requests: list[RecordedRequest] = []
        self._lock = threading.Lock()
        self._stopping = threading.Event()
        self._httpd: _Server | None = None
        self._thread: threading.Thread | None = None

    # lifecycle

    def start(self) -> Self:
        self._stopping.clear()
        handler = type("_BoundHandler", (self.handler,), {"fake": self})
        httpd = _Server(("127.0.0.1", 0), handler)
        self._httpd = httpd
        self._thread = threading.Thread(
            target=httpd.serve_forever, args=(0.05,), name=self.thread_name, daemon=True
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stopping.set()
        if self._httpd is not None:
            self._httpd.shutdown()
            self._httpd.server_close()
        if self._thread is not None:
            self._thread.join(timeout=5)
        self._httpd = None
        self._thread = None

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    @property
    def port(self) -> int:
        assert self._httpd is not None, "the fake server is not started"
        return self._httpd.server_address[1]

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}{self.url_suffix}"

    # script

    def enqueue(self, *items: Any) -> None:
        with self._lock:
            self._queue.extend(items)

    @property
    def remaining(self) -> int:
        with self._lock:
            return len(self._queue)

    @property
    def requests(self) -> list[RecordedRequest]:
        with self._lock:
            return list(self._requests)

    def _record(self, request: RecordedRequest) -> None:
        with self._lock:
            self._requests.append(request)

    def _next_item(self, body: dict[str, Any]) -> Any:
        with self._lock:
            if self._queue:
                return self._queue.popleft()
            responder = self.responder
        if responder is None:
            return self._script_ran_out()
        return responder(body)

    def _script_ran_out(self) -> Any:
        raise NotImplementedError


class FakeOpenAIServer(ScriptedServer):
    thread_name = "fake-openai"
    url_suffix = "/v1"

    def __init__(self, *, models: Sequence[str] = ("fake-model",)) -> None:
        super().__init__()
        self.models = list(models)
        self.reject_stream_options = False
        self.handler = _Handler

    def chat_bodies(self) -> list[dict[str, Any]]:
        return [r.body for r in self.requests if _route(r.path).endswith("/chat/completions")]

    def _script_ran_out(self) -> Item:
        return ErrorReply(500, "fake server: the script ran out (no queued item and no responder)")


def _route(path: str) -> str:
    """A request's path without its query (an endpoint's ?api-version=...) or end slash."""
    return urlsplit(path).path.rstrip("/")


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    block_on_close = False  # a Hang must not keep stop() waiting

    def handle_error(self, request: Any, client_address: Any) -> None:
        return None  # clients hanging up mid-reply is a scripted event, not a failure


class _Handler(BaseHTTPRequestHandler):
    fake: FakeOpenAIServer
    protocol_version = "HTTP/1.1"
    # Headers and body leave in separate writes; with Nagle's algorithm on, each reply
    # on a kept-alive connection then waits out the client's delayed ACK (about 40 ms).
    disable_nagle_algorithm = True

    def log_message(self, format: str, *args: Any) -> None:
        return None  # keep test output clean

    def do_GET(self) -> None:
        self.fake._record(self._recorded(None))
        if _route(self.path).endswith("/models"):
            data = [{"id": m, "object": "model", "owned_by": "fake"} for m in self.fake.models]
            self._send_json(200, {"object": "list", "data": data})
        else:
            self._send_error(ErrorReply(404, f"no route for GET {self.path}"))

    def do_POST(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b""
        try:
            body = json.loads(raw) if raw else None
        except json.JSONDecodeError:
            body = raw.decode(errors="replace")
        self.fake._record(self._recorded(body))
        if not _route(self.path).endswith("/chat/completions"):
            self._send_error(ErrorReply(404, f"no route for POST {self.path}"))
            return
        if not isinstance(body, dict):
            self._send_error(ErrorReply(400, "the request body is not a JSON object"))
            return
        if self.fake.reject_stream_options and "stream_options" in body:
            self._send_error(
                ErrorReply(400, "Unrecognized request argument supplied: stream_options")
            )
            return
        self._serve(self.fake._next_item(body), body)

    def _recorded(self, body: Any) -> RecordedRequest:
        headers = {k.lower(): v for k, v in self.headers.items()}
        return RecordedRequest(self.command, self.path, headers, body, self.client_address[1])

    def _serve(self, item: Item, request: dict[str, Any]) -> None:
        match item:
            case ErrorReply():
                self._send_error(item)
            case Hang(seconds=seconds):
                self.fake._stopping.wait(seconds)
                self._drop_connection()
            case Reply():
                wants_stream = bool(request.get("stream")) if item.stream is None else item.stream
                if wants_stream:
                    self._send_stream(item, request)
                else:
                    self._send_json(200, _completion(item, request))
            case _:
                self._send_error(ErrorReply(500, f"fake server: unknown script item {item!r}"))

    # writing

    def _send_json(self, status: int, payload: Any, headers: Mapping[str, str] = {}) -> None:
        self._send_bytes(status, json.dumps(payload).encode(), headers)

    def _send_error(self, error: ErrorReply) -> None:
        self._send_bytes(error.status, error.body(), error.headers)

    def _send_bytes(self, status: int, data: bytes, headers: Mapping[str, str]) -> None:
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        for name, value in headers.items():
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(data)
        self.wfile.flush()

    def _send_stream(self, reply: Reply, request: dict[str, Any]) -> None:
        self.send_response(200)
        if reply.content_type is not None:
            self.send_header("Content-Type", reply.content_type)
        self.send_header("Cache-Control", "no-cache")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        events = [json.dumps(chunk) for chunk in _stream_chunks(reply, request)]
        if reply.cut_after is not None:
            for data in events[: reply.cut_after]:
                self._write_chunk(f"data: {data}\n\n")
            self._drop_connection()  # no terminating chunk: the body is incomplete
            return
        if reply.error_after is not None:
            error = reply.error
            if isinstance(error, str):
                error = {"message": error, "type": "server_error", "code": None}
            events = [*events[: reply.error_after], json.dumps({"error": error})]
        elif reply.done:
            events.append("[DONE]")
        for position, data in enumerate(events):
            self._pace(position, reply.stall_after, reply.stall_s, reply.trickle_s)
            self._write_chunk(f"data: {data}\n\n")
        self.wfile.write(b"0\r\n\r\n")
        self.wfile.flush()

    def _pace(
        self, position: int, stall_after: int | None, stall_s: float, trickle_s: float
    ) -> None:
        """Wait before writing chunk `position` (0-based) as a paced reply asks: the
        stall before chunk `stall_after`, the trickle before every chunk but the first.
        Waiting on `_stopping` lets stop() end a long stall at once."""
        if position > 0 and trickle_s > 0:
            self.fake._stopping.wait(trickle_s)
        if position == stall_after and stall_s > 0:
            self.fake._stopping.wait(stall_s)

    def _write_chunk(self, text: str) -> None:
        data = text.encode()
        self.wfile.write(f"{len(data):x}\r\n".encode() + data + b"\r\n")
        self.wfile.flush()

    def _drop_connection(self) -> None:
        self.close_connection = True
        try:
            self.wfile.flush()
            self.connection.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass  # the client may have gone already


# building replies


def _pieces(text: str, size: int) -> list[str]:
    size = max(size, 1)
    return [text[i : i + size] for i in range(0, len(text), size)]


def _call_id(call: Call, position: int) -> str:
    return call.id if call.id is not None else f"call_{position}"


def _finish_reason(reply: Reply) -> str | None:
    if reply.finish_reason == AUTO:
        return "tool_calls" if reply.calls else "stop"
    return reply.finish_reason


def _sends_usage(reply: Reply, request: dict[str, Any]) -> bool:
    if reply.usage is None or reply.usage_when == "never":
        return False
    if reply.usage_when == "always":
        return True
    options = request.get("stream_options")
    return isinstance(options, dict) and options.get("include_usage") is True


def _call_deltas(call: Call, position: int, reply: Reply) -> list[dict[str, Any]]:
    pieces = _pieces(call.arguments_text(), reply.args_chunk) or [""]
    first: dict[str, Any] = {
        "index": position,
        "id": _call_id(call, position),
        "type": "function",
        "function": {"name": call.name, "arguments": pieces[0]},
    }
    rest = [{"index": position, "function": {"arguments": p}} for p in pieces[1:]]
    deltas = [first, *rest]
    if reply.omit_index:
        for delta in deltas:
            del delta["index"]
    return deltas


def _round_robin(groups: list[list[dict[str, Any]]]) -> Iterator[dict[str, Any]]:
    longest = max((len(g) for g in groups), default=0)
    for step in range(longest):
        for group in groups:
            if step < len(group):
                yield group[step]


def _stream_chunks(reply: Reply, request: dict[str, Any]) -> list[dict[str, Any]]:
    model = reply.model or request.get("model") or "fake-model"
    created = int(time.time())

    def chunk(delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
        choice = {"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish}
        return {
            "id": "chatcmpl-fake",
            "object": "chat.completion.chunk",
            "created": created,
            "model": model,
            "choices": [choice],
        }

    chunks = [chunk({"role": "assistant", "content": ""})]
    chunks += [chunk({"reasoning_content": p}) for p in _pieces(reply.reasoning, reply.text_chunk)]
    chunks += [chunk({"content": p}) for p in _pieces(reply.text, reply.text_chunk)]
    groups = [_call_deltas(call, i, reply) for i, call in enumerate(reply.calls)]
    ordered = _round_robin(groups) if reply.interleave else (d for g in groups for d in g)
    chunks += [chunk({"tool_calls": [delta]}) for delta in ordered]
    finish = _finish_reason(reply)
    if finish is not None:
        chunks.append(chunk({}, finish))
    if _sends_usage(reply, request):
        usage_chunk = chunk({})
        usage_chunk["choices"] = []
        usage_chunk["usage"] = dict(reply.usage or {})
        chunks.append(usage_chunk)
    return chunks


def _completion(reply: Reply, request: dict[str, Any]) -> dict[str, Any]:
    message: dict[str, Any] = {"role": "assistant", "content": reply.text or None}
    if reply.reasoning:
        message["reasoning_content"] = reply.reasoning
    if reply.calls:
        message["tool_calls"] = [
            {
                "id": _call_id(call, i),
                "type": "function",
                "function": {"name": call.name, "arguments": call.arguments_text()},
            }
            for i, call in enumerate(reply.calls)
        ]
    payload: dict[str, Any] = {
        "id": "chatcmpl-fake",
        "object": "chat.completion",
        "created": int(time.time()),
        "model": reply.model or request.get("model") or "fake-model",
        "choices": [{"index": 0, "message": message, "finish_reason": _finish_reason(reply)}],
    }
    if reply.usage is not None and reply.usage_when != "never":
        payload["usage"] = dict(reply.usage)
    return payload
