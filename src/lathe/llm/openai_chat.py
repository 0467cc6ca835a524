"""The OpenAI-compatible chat completions provider (OpenAI, vLLM, llama.cpp, Ollama,
DeepSeek, OpenRouter, LM Studio, ...), speaking the protocol over httpx2 itself
(`lathe.llm.http_stream`): importing the `openai` SDK cost every process about a second
of CPU for one POST and an SSE reader.

What it sends: the system prompt as the first message, then the conversation; tools as
`{"type": "function", "function": {...}}`; `stream=True` with
`stream_options={"include_usage": true}` unless the model's profile says not to
(`stream_options=False`). Servers that reject `stream_options` get the request again
without it, and the provider remembers that for its lifetime.

What it reads: text deltas, `reasoning_content` (or `reasoning`) deltas as thinking,
tool-call deltas assembled by index, the finish reason and usage (estimated from the
bytes sent and received when the server reports none, or only zeros).
A server that ignores `stream=True` and answers one JSON body is read as one reply. A
200 reply that is neither (a login page, another API's JSON: no `choices`, a stream
of another API's events) is `errors_map.not_a_reply`, not retried.
With `thinking_in_text` (a model that writes `<think>...</think>` into its text, as
Qwen3 or DeepSeek-R1 do on a server without a reasoning parser), what is inside the
tags is thinking, wherever the tags fall across deltas; whitespace right after a
closing tag is dropped.

Decisions:
- Thinking from earlier replies is dropped on replay: chat completions has no field for
  it, DeepSeek rejects `reasoning_content` in requests, and sent as plain text the model
  would take its private reasoning for something it told the user.
- Usage follows the Anthropic convention shared by all providers: `input_tokens`
  excludes cached prompt tokens, which are counted in `cache_read_tokens`.
- The output limit goes in the field the model's profile names, `max_tokens_field`:
  `max_tokens` (what compatible servers understand, the default) or
  `max_completion_tokens` (api.openai.com's newer models reject `max_tokens`). No URL
  decides it. `ModelRequest.extra` is merged into the request body as is.
- The body is built here and encoded as JSON with each chunk of the conversation's
  (`lathe.chunked`) encoding reused while the chunk is unchanged, byte for byte what
  encoding the whole body gives (`_encoded_body`).
- An empty API key sends no `Authorization` header: local servers need none, and one
  that wants a key answers 401, reported as AuthError naming the variable to set. A
  base URL's user:password is sent as Basic auth only when no key is set: a key is
  never dropped for it.
- Nothing here retries: `lathe.llm.retry` owns retrying.
- Each stream is bounded by `timeouts` (`lathe.llm.timeouts`): the idle limit is the
  httpx2 timeout, the total a deadline around the whole attempt.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import AsyncGenerator, AsyncIterator, Mapping
from dataclasses import dataclass, field
from typing import Any, assert_never
from urllib.parse import urlsplit

from lathe.chunked import ChunkCache
from lathe.config.secrets import masked_url
from lathe.errors import Transport
from lathe.llm.base import (
    Completed,
    ModelRequest,
    StreamEvent,
    TextDelta,
    ThinkingDelta,
    reported_or_estimated,
    whole_text,
)
from lathe.llm.errors_map import (
    NO_KEY,
    ErrorContext,
    guarded,
    mentions_stream_options,
    not_a_reply,
    stream_error,
    to_provider_error,
    unparsed_output,
)
from lathe.llm.http_stream import (
    LazyClient,
    MalformedReply,
    ReportedError,
    StatusError,
    body_start,
    content_type,
    is_event_stream,
    is_json,
    json_bytes,
    json_events,
    new_client,
    post_streaming,
    sniffed,
)
from lathe.llm.timeouts import DEFAULT_TIMEOUTS, Timeouts, within_total
from lathe.types import (
    AssistantMessage,
    Message,
    StopReason,
    Thinking,
    ToolCall,
    ToolResultMessage,
    ToolSpec,
    Usage,
    UserMessage,
)

DEFAULT_BASE_URL = "https://api.openai.com/v1"
_PATH = "chat/completions"
_THINKING_SOURCE = "openai_chat"
_STOP_REASONS = {
    "stop": StopReason.END,
    "eos": StopReason.END,
    "end_turn": StopReason.END,
    "tool_calls": StopReason.TOOL_USE,
    "function_call": StopReason.TOOL_USE,
    "length": StopReason.MAX_TOKENS,
    "max_tokens": StopReason.MAX_TOKENS,
    "content_filter": StopReason.CONTENT_FILTER,
}
# In `_body`, where `_encoded_body` puts the conversation's JSON, encoded chunk by chunk.
_CONVERSATION = object()


class OpenAIChatProvider:
    """A Provider (see `lathe.llm.base`) for one model behind a chat completions API."""

    def __init__(
        self,
        model: str,
        base_url: str | None,
        api_key: str,
        *,
        api_key_env: str = "OPENAI_API_KEY",
        timeouts: Timeouts = DEFAULT_TIMEOUTS,
        extra_headers: Mapping[str, str] | None = None,
        base_url_fix: str = "fix the base URL",
        stream_options: bool = True,
        max_tokens_field: str = "max_tokens",
        thinking_in_text: bool = False,
        calls_per_reply: int | None = None,
    ) -> None:
        """The last four are the wire part of the model's profile (see
        `lathe.config.schema.ProfileConfig`)."""
        self._model = model
        # Resolved here, not by the SDK, so OPENAI_BASE_URL is read by config alone.
        self._base_url = (base_url or DEFAULT_BASE_URL).rstrip("/")
        self._api_key = api_key
        self._timeouts = timeouts
        self._extra_headers = dict(extra_headers or {})
        # Messages name the endpoint with its credentials masked: too short to look like
        # secrets, a ?api_key= or a password was printed whole in every error.
        shown = masked_url(self._base_url)
        self._ctx = ErrorContext(model, shown, api_key_env, api_key, timeouts, base_url_fix)
        self._send_stream_options = stream_options
        self._max_tokens_field = max_tokens_field
        self._thinking_in_text = thinking_in_text
        self._calls_per_reply = calls_per_reply
        self._client = LazyClient(self._new_client, close=lambda client: client.aclose())
        self._encoded: ChunkCache[Message, bytes, bytes] = ChunkCache(
            lambda message: json_bytes(_wire_message(message)), b",".join
        )

    @property
    def model(self) -> str:
        return self._model

    def stream(self, request: ModelRequest) -> AsyncIterator[StreamEvent]:
        attempt = within_total(
            self._stream(request), self._timeouts.total_s, before=self._client.get
        )
        return guarded(attempt, to_provider_error, self._ctx)

    async def aclose(self) -> None:
        await self._client.close()

    # the wire

    async def _stream(self, request: ModelRequest) -> AsyncGenerator[StreamEvent, None]:
        reply = _Reply(
            self._model, thinking_in_text=self._thinking_in_text, max_calls=self._calls_per_reply
        )
        try:
            response, sent = await self._open(request)
            reply.sent_bytes = sent
            try:
                response = await sniffed(response)  # closing it closes the one sent
                if is_json(response):
                    chunk = _completion_as_chunk(
                        await response.aread(), content_type(response), self._ctx
                    )
                    for event in reply.feed(chunk):
                        yield event
                elif not is_event_stream(response):
                    raise not_a_reply(self._ctx, content_type(response), await body_start(response))
                else:
                    async for chunk in json_events(response):
                        for event in reply.feed(chunk):
                            yield event
                        if reply.enough:
                            break  # closing the stream stops the generation
                    if (start := reply.foreign_start()) is not None:
                        raise not_a_reply(self._ctx, content_type(response), start)
            finally:
                await response.aclose()
        except (StatusError, ReportedError) as exc:
            if not unparsed_output(exc):
                raise
            unreadable = AssistantMessage(model=self._model, stop_reason=StopReason.UNREADABLE)
            yield Completed(unreadable)
            return
        for event in reply.flush():
            yield event
        message = reply.finish(self._ctx.base_url)
        if not message.tool_calls and request.tools:
            from lathe.llm.text_calls import with_text_calls

            names = [spec.name for spec in request.tools]
            message = with_text_calls(message, names, self._calls_per_reply)
        yield Completed(message)

    async def _open(self, request: ModelRequest) -> Any:
        """The response, and the size of the body sent (what usage is estimated from
        when the server reports none)."""
        client = self._client.get()
        body = self._encoded_body(request)
        try:
            return await post_streaming(client, _PATH, body), len(body)
        except Exception as exc:
            if not (self._send_stream_options and mentions_stream_options(exc)):
                raise
        self._send_stream_options = False
        body = self._encoded_body(request)
        return await post_streaming(client, _PATH, body), len(body)

    def warm_up(self) -> None:
        """Import httpx2 and build the client, so that the first request does not wait."""
        self._client.get()

    def _new_client(self) -> Any:
        headers = dict(self._extra_headers)
        # A key is sent as Bearer; the URL's user:password goes as Basic auth only when
        # no key is set (lathe's placeholder for a local server is none).
        placeholder = self._api_key == NO_KEY and "@" in urlsplit(self._base_url).netloc
        if self._api_key and not placeholder:
            headers.setdefault("Authorization", f"Bearer {self._api_key}")
        return new_client(self._base_url, headers, self._timeouts.idle_s)

    def _body(self, request: ModelRequest) -> dict[str, Any]:
        """The request body, its `messages` left to `_encoded_body` (`_CONVERSATION`)."""
        body: dict[str, Any] = {"model": self._model, "messages": _CONVERSATION, "stream": True}
        if self._send_stream_options:
            body["stream_options"] = {"include_usage": True}
        if request.tools:
            body["tools"] = [wire_tool(spec) for spec in request.tools]
        if request.max_output_tokens is not None:
            body[self._max_tokens_field] = request.max_output_tokens
        if request.temperature is not None:
            body["temperature"] = request.temperature
        body.update(request.extra)
        return body

    def _encoded_body(self, request: ModelRequest) -> bytes:
        """`json_bytes` of the body with `wire_messages` as its `messages`, byte for byte,
        the conversation joined from its chunks' encodings (cached while a chunk stays
        the same object, `lathe.chunked`) instead of converted and encoded whole."""
        body = self._body(request)
        if body["messages"] is not _CONVERSATION:  # `extra` brought messages of its own
            return json_bytes(body)
        system = [json_bytes(wire_messages(request.system, ())[0])] if request.system else []
        conversation = b",".join([*system, *self._encoded.map(request.messages)])
        # json.dumps writes a dict as its members joined by commas inside braces.
        members = [
            b'"messages":[' + conversation + b"]"
            if value is _CONVERSATION
            else json_bytes({key: value})[1:-1]
            for key, value in body.items()
        ]
        return b"{" + b",".join(members) + b"}"


# the internal message model -> chat completions


def wire_messages(system: str, messages: Any) -> list[dict[str, Any]]:
    """The chat completions `messages` list for a system prompt and a conversation."""
    wire: list[dict[str, Any]] = [{"role": "system", "content": system}] if system else []
    wire.extend(_wire_message(message) for message in messages)
    return wire


def _wire_message(message: Message) -> dict[str, Any]:
    match message:
        case UserMessage():
            return {"role": "user", "content": message.content}
        case AssistantMessage():
            wire: dict[str, Any] = {"role": "assistant", "content": message.text}
            if message.tool_calls:
                wire["content"] = message.text or None
                wire["tool_calls"] = [_wire_call(call) for call in message.tool_calls]
            return wire
        case ToolResultMessage():
            # The wire has no error flag: the text says so, once (lathe's own error
            # results start with "Error:" already).
            marked = not message.is_error or message.content.startswith("Error:")
            content = message.content if marked else f"Error: {message.content}"
            return {"role": "tool", "tool_call_id": message.tool_call_id, "content": content}
        case _:
            assert_never(message)


def _wire_call(call: ToolCall) -> dict[str, Any]:
    return {
        "id": call.id,
        "type": "function",
        "function": {"name": call.name, "arguments": call.arguments or "{}"},
    }


def wire_tool(spec: ToolSpec) -> dict[str, Any]:
    return {
        "type": "function",
        "function": {
            "name": spec.name,
            "description": spec.description,
            "parameters": spec.parameters,
        },
    }


# chat completions -> the internal message model


@dataclass
class _PartialCall:
    index: int | None
    id: str = ""
    name: str = ""
    arguments: list[str] = field(default_factory=list)


class _Reply:
    """Assembles one reply from stream chunks (plain dicts, as the server sent them)."""

    def __init__(
        self, requested_model: str, *, thinking_in_text: bool = False, max_calls: int | None = None
    ) -> None:
        self._model = requested_model
        self._max_calls = max_calls
        self.enough = False
        """The model started a call past `max_calls`: the reply is complete without it."""
        self._text: list[str] = []
        self._thinking: list[str] = []
        self._inline = _InlineThinking() if thinking_in_text else None
        self._calls: list[_PartialCall] = []
        self._whole_content, self._whole_reasoning = _WholeCharacters(), _WholeCharacters()
        self._finish_reason: str | None = None
        self._usage: Usage | None = None  # as the server reported it
        self.sent_bytes = 0  # the request's body
        self._first: list[object] = []  # the stream's first event, once one came
        self._chunk_seen = False  # an event with `choices`: a chat completion stream

    def foreign_start(self) -> bytes | None:
        """The first event, as JSON, of a stream none of whose events was a chat
        completion chunk (another API's stream behind this base URL); else None."""
        if self._chunk_seen or not self._first:
            return None
        return json.dumps(self._first[0]).encode()

    def feed(self, chunk: object) -> list[StreamEvent]:
        if not self._first:
            self._first.append(chunk)
        if not isinstance(chunk, Mapping):
            return []
        self._chunk_seen = self._chunk_seen or "choices" in chunk
        if isinstance(chunk.get("model"), str) and chunk["model"]:
            self._model = chunk["model"]
        if isinstance(chunk.get("usage"), Mapping):
            self._usage = _usage(chunk["usage"])
        events: list[StreamEvent] = []
        for choice in _choices(chunk):
            if isinstance(choice, Mapping) and choice.get("index", 0) in (0, None):
                events.extend(self._feed_choice(choice))
        return events

    def _feed_choice(self, choice: Mapping[str, Any]) -> list[StreamEvent]:
        events: list[StreamEvent] = []
        if choice.get("finish_reason"):
            self._finish_reason = str(choice["finish_reason"])
        delta = choice.get("delta")
        if not isinstance(delta, Mapping):
            return events
        reasoning = delta.get("reasoning_content") or delta.get("reasoning")
        if isinstance(reasoning, str) and reasoning:
            events += self._reasoning(self._whole_reasoning.feed(reasoning))
        content = delta.get("content")
        if isinstance(content, str) and content:
            events += self._content(self._whole_content.feed(content))
        for call_delta in delta.get("tool_calls") or ():
            if isinstance(call_delta, Mapping):
                self._feed_call(call_delta)
        return events

    def flush(self) -> list[StreamEvent]:
        """What the content held back at the end of the stream: text that only looked
        like the start of a tag, half a character."""
        events = self._reasoning(self._whole_reasoning.flush())
        events += self._content(self._whole_content.flush())
        pieces = self._inline.flush() if self._inline else []
        return events + [self._piece(thinking, text) for thinking, text in pieces]

    def _reasoning(self, text: str) -> list[StreamEvent]:
        if not text:
            return []
        self._thinking.append(text)
        return [ThinkingDelta(text)]

    def _content(self, text: str) -> list[StreamEvent]:
        """Content text, its inline thinking split off where the profile says so."""
        if not text:
            return []
        pieces = self._inline.feed(text) if self._inline else [(False, text)]
        return [self._piece(thinking, piece) for thinking, piece in pieces]

    def _piece(self, thinking: bool, text: str) -> StreamEvent:
        if thinking:
            self._thinking.append(text)
            return ThinkingDelta(text)
        self._text.append(text)
        return TextDelta(text)

    def _feed_call(self, delta: Mapping[str, Any]) -> None:
        index = delta.get("index") if isinstance(delta.get("index"), int) else None
        call_id = delta.get("id") if isinstance(delta.get("id"), str) else ""
        slot = self._slot(index, call_id)
        slot.id = slot.id or call_id
        function = delta.get("function")
        if not isinstance(function, Mapping):
            return
        # The name comes whole in one delta; some servers repeat it, so the first wins.
        if isinstance(function.get("name"), str) and not slot.name:
            slot.name = function["name"]
        arguments = function.get("arguments")
        if isinstance(arguments, str):
            slot.arguments.append(arguments)
        elif isinstance(arguments, Mapping):  # a few servers send an object, not text
            slot.arguments.append(json.dumps(arguments))

    def _slot(self, index: int | None, call_id: str) -> _PartialCall:
        """The call a delta continues: same id (unless it brings another index: some
        servers give every call one id), else same index (unless it brings a new id:
        some servers reuse index 0 for parallel calls), else, with neither, the latest
        call."""
        for slot in reversed(self._calls):
            same_index = index is None or slot.index is None or index == slot.index
            if call_id and slot.id == call_id and same_index:
                return slot
            if index is not None and slot.index == index and not (call_id and slot.id):
                return slot
        if index is None and not call_id and self._calls:
            return self._calls[-1]
        slot = _PartialCall(index)
        if self._max_calls is not None and len(self._calls) >= self._max_calls:
            self.enough = True
            self._finish_reason = self._finish_reason or "tool_calls"
            return slot  # dropped: its arguments have not even begun
        self._calls.append(slot)
        return slot

    def finish(self, base_url: str) -> AssistantMessage:
        if self._finish_reason is None:
            raise Transport(
                f"the stream ended before the model finished (no finish_reason from "
                f"{base_url}); the connection was probably cut"
            )
        calls = tuple(
            ToolCall(
                id=call_id, name=slot.name, arguments=whole_text("".join(slot.arguments)) or "{}"
            )
            for slot, call_id in zip(self._calls, self._unique_ids(), strict=True)
        )
        stop = _STOP_REASONS.get(self._finish_reason, StopReason.END)
        if calls and stop is StopReason.END:
            stop = StopReason.TOOL_USE
        thinking = "".join(self._thinking)
        text = "".join(self._text)
        return AssistantMessage(
            text=text,
            thinking=(Thinking(text=thinking, provider=_THINKING_SOURCE),) if thinking else (),
            tool_calls=calls,
            stop_reason=stop,
            # Estimated where the server reported none: it sent none, sent `{}` or zeros,
            # or the stream was closed after a call before its usage came.
            usage=reported_or_estimated(self._usage, self.sent_bytes, text + thinking, calls),
            model=self._model,
        )

    def _unique_ids(self) -> list[str]:
        """Each call's id, made up where the server sent none or one an earlier call
        has: a result answers its call by id, so two calls must not share one."""
        seen: set[str] = set()
        ids = []
        for slot in self._calls:
            call_id = slot.id if slot.id and slot.id not in seen else ""
            call_id = call_id or f"call_{uuid.uuid4().hex[:24]}"
            seen.add(call_id)
            ids.append(call_id)
        return ids


class _WholeCharacters:
    """Streamed text with each character whole: a UTF-16 pair a server's chunks cut in
    two (`"\\ud83d"` in one, `"\\ude00"` in the next, as JSON escapes allow) is joined,
    and a surrogate with no partner becomes U+FFFD; one such character made the run's
    events unwritable."""

    def __init__(self) -> None:
        self._held = ""

    def feed(self, text: str) -> str:
        text, self._held = self._held + text, ""
        if text and "\ud800" <= text[-1] <= "\udbff":  # the first half: wait for the second
            text, self._held = text[:-1], text[-1]
        return whole_text(text)

    def flush(self) -> str:
        held, self._held = self._held, ""
        return whole_text(held)


_OPEN_TAG, _CLOSE_TAG = "<think>", "</think>"


class _InlineThinking:
    """Splits reply text written as `text <think>reasoning</think> text` into pieces of
    text and of thinking as it streams. A tag may be cut anywhere across deltas, so a
    tail that could be the start of the next tag is held back until the following delta
    (or the end of the stream) settles it; nothing else waits."""

    def __init__(self) -> None:
        self._inside = False
        self._held = ""
        self._after_close = False  # whitespace right after </think> is not the answer

    def feed(self, content: str) -> list[tuple[bool, str]]:
        """(is_thinking, text) pieces of one delta, in order."""
        data, self._held = self._held + content, ""
        pieces: list[tuple[bool, str]] = []
        while data:
            tag = _CLOSE_TAG if self._inside else _OPEN_TAG
            at = data.find(tag)
            if at < 0:
                keep = _tag_start_at_end(data, tag)
                self._add(pieces, data[: len(data) - keep])
                self._held = data[len(data) - keep :]
                break
            self._add(pieces, data[:at])
            data = data[at + len(tag) :]
            self._inside = not self._inside
            self._after_close = not self._inside
        return pieces

    def flush(self) -> list[tuple[bool, str]]:
        pieces: list[tuple[bool, str]] = []
        self._add(pieces, self._held)
        self._held = ""
        return pieces

    def _add(self, pieces: list[tuple[bool, str]], text: str) -> None:
        if self._after_close and not self._inside:
            text = text.lstrip()
            self._after_close = not text
        if text:
            pieces.append((self._inside, text))


def _tag_start_at_end(data: str, tag: str) -> int:
    """Length of the longest end of `data` that is a proper start of `tag`."""
    for size in range(min(len(tag) - 1, len(data)), 0, -1):
        if data.endswith(tag[:size]):
            return size
    return 0


def _choices(chunk: Mapping[str, Any]) -> list[Any]:
    """A chunk's (or a completion's) `choices`; MalformedReply when it is not a list."""
    choices = chunk.get("choices")
    if choices is None:
        return []
    if not isinstance(choices, list):
        raise MalformedReply(f"its 'choices' is {json.dumps(choices)[:60]}, not a list")
    return choices


def _completion_as_chunk(raw: bytes, said_type: str, ctx: ErrorContext) -> dict[str, Any]:
    """A whole (non-streamed) completion, the reply's body `raw` (of the content type
    `said_type`), rewritten as one stream
    chunk; an error it reports raised as the error it stands for, and a body that is no
    completion at all (not JSON, no choice) raised as `not_a_reply`."""
    try:
        body = json.loads(raw)
    except ValueError:
        body = None
    if isinstance(body, Mapping) and body.get("error"):
        raise stream_error(body["error"], ctx, streamed=False)
    if not isinstance(body, Mapping) or not any(isinstance(c, Mapping) for c in _choices(body)):
        raise not_a_reply(ctx, said_type, raw)
    choices = []
    for choice in _choices(body):
        if not isinstance(choice, Mapping):
            continue
        given = choice.get("message")
        message = dict(given) if isinstance(given, Mapping) else {}
        calls = message.get("tool_calls")
        calls = calls if isinstance(calls, list) else []
        message["tool_calls"] = [
            {**call, "index": i} for i, call in enumerate(calls) if isinstance(call, Mapping)
        ]
        choices.append(
            {
                "index": choice.get("index", 0),
                "delta": message,
                "finish_reason": choice.get("finish_reason"),
            }
        )
    return {"model": body.get("model"), "usage": body.get("usage"), "choices": choices}


def _usage(raw: Mapping[str, Any]) -> Usage:
    prompt = _count(raw.get("prompt_tokens"))
    details = raw.get("prompt_tokens_details")
    cached = _count(details.get("cached_tokens")) if isinstance(details, Mapping) else 0
    cached = min(cached or _count(raw.get("prompt_cache_hit_tokens")), prompt)
    return Usage(
        input_tokens=prompt - cached,
        output_tokens=_count(raw.get("completion_tokens")),
        cache_read_tokens=cached,
    )


def _count(value: object) -> int:
    return value if isinstance(value, int) and value > 0 else 0
