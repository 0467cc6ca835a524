"""The Anthropic Messages API provider, built on the official `anthropic` SDK.

What it sends (`POST {base_url}/v1/messages`, `stream: true`):
- `system` as one text block and the last tool definition, both marked
  `cache_control: {"type": "ephemeral"}`, so the stable prefix (tools, then system) is
  cached; the last content block of the conversation is marked too, so each turn of an
  agent loop reads the previous turn's prefix from the cache instead of paying for it
  again (3 of the API's 4 breakpoints).
- `max_tokens` (required by the API): `ModelRequest.max_output_tokens`, else 8192.
- The conversation with roles alternating and the first message from the user:
  consecutive messages of one role are merged; tool results become `tool_result` blocks
  (`is_error` kept) in ONE user message after the assistant message that asked for them,
  ahead of any user text that follows.

What it reads: `text_delta` → TextDelta, `thinking_delta` → ThinkingDelta, each
thinking block kept whole with its signature (`Thinking(provider="anthropic")`),
`tool_use` blocks assembled from `input_json_delta` chunks into `ToolCall.arguments`
(the JSON text exactly as streamed, malformed or not: the loop repairs it or tells the
model), usage, and the stop reason. A stream without `message_stop` raises Transport.
A 200 reply that is not a stream is read as one whole message when it is one (a server
that ignored `stream: true`), as the error it reports when it holds one, and is else
`errors_map.not_a_reply` (a login page, another API's JSON), not retried.

Decisions:
- Thinking is off unless asked for: `ModelRequest.extra["thinking_budget"] = N` sends
  `{"type": "enabled", "budget_tokens": N}`; `extra["thinking"]` (a dict) is sent as is,
  e.g. `{"type": "adaptive"}`. With thinking on, `temperature` is not sent (the API
  allows only the default) and `max_tokens` is raised by the budget when the budget
  would not fit under it. Every other `extra` key is merged into the request body.
- Replay of thinking: a block from Anthropic with a signature goes back as a `thinking`
  block (a `redacted_thinking` block is kept as `Thinking(text="", signature=<data>,
  provider="anthropic-redacted")` and goes back as one); thinking from another vendor,
  or unsigned, goes back as a text block wrapped in `<earlier_reasoning>` so the model
  reads it as its own earlier reasoning, not as something it told the user.
- Tool-call arguments that are not a JSON object are sent as
  `{"_raw_arguments": "<the text>"}` (empty text as `{}`): the API wants an object, and
  keeping the text lets the model see what it wrote when the loop reports the error.
- Empty turns the API would refuse (an empty user text, an assistant reply with nothing
  in it) are sent as a short placeholder text rather than dropped, so alternation and
  tool pairing stay intact.
- Usage: Anthropic's `input_tokens` already excludes cached tokens (the convention all
  providers follow); `cache_read_input_tokens` → `cache_read_tokens`,
  `cache_creation_input_tokens` → `cache_write_tokens`. `message_delta` values override
  `message_start` ones (newer servers report cumulative totals there). A negative count
  is read as 0, and a reply with no input and no output token reported is estimated
  from the bytes sent and received, as the OpenAI-compatible provider does
  (`base.reported_or_estimated`): a server sending `usage: {}` had left the token and
  cost budgets at zero, and one sending -100000000 had made the cost negative.
- `base_url` is where the API starts without `/v1` (https://api.anthropic.com); a
  trailing `/v1` is tolerated and removed. It and the key are passed explicitly, so the
  SDK's own environment, profile and credential-file discovery never runs.
- The SDK's own retries are off (`max_retries=0`): `lathe.llm.retry` owns retrying.
  Warnings the SDK would print (deprecated models) are silenced: core never prints.
- Each stream is bounded by `timeouts` (`lathe.llm.timeouts`): the idle limit is the
  SDK's httpx timeout, the total a deadline around the whole attempt.
"""

from __future__ import annotations

import json
import uuid
import warnings
from collections.abc import AsyncGenerator, AsyncIterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, assert_never

from lathe.chunked import ChunkCache
from lathe.config.secrets import masked_url
from lathe.errors import BadRequest, ProviderError, Transport
from lathe.llm.base import (
    Completed,
    ModelRequest,
    StreamEvent,
    TextDelta,
    ThinkingDelta,
    reported_or_estimated,
)
from lathe.llm.errors_map import (
    ErrorContext,
    connection_error,
    from_status,
    guarded,
    not_a_reply,
    request_id,
    scrub,
    server_message,
    stream_error,
    timed_out,
)
from lathe.llm.http_stream import (
    LazyClient,
    body_start,
    content_type,
    is_event_stream,
    is_json,
    sniffed,
    without_query,
)
from lathe.llm.timeouts import DEFAULT_TIMEOUTS, Timeouts, TotalTimeExceeded, within_total
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

DEFAULT_BASE_URL = "https://api.anthropic.com"
DEFAULT_MAX_TOKENS = 8192
THINKING_SOURCE = "anthropic"
REDACTED_THINKING_SOURCE = "anthropic-redacted"
_CACHE = {"type": "ephemeral"}
_EMPTY_USER = "(empty message)"
_EMPTY_ASSISTANT = "(empty reply)"
# What an empty turn holds; shared, never changed (`_finished` marks a copy), and told
# apart from a message that says the same by identity.
_PLACEHOLDERS = {
    "user": {"type": "text", "text": _EMPTY_USER},
    "assistant": {"type": "text", "text": _EMPTY_ASSISTANT},
}
_STOP_REASONS = {
    "end_turn": StopReason.END,
    "stop_sequence": StopReason.END,
    "pause_turn": StopReason.END,
    "tool_use": StopReason.TOOL_USE,
    "max_tokens": StopReason.MAX_TOKENS,
    "model_context_window_exceeded": StopReason.MAX_TOKENS,
    "refusal": StopReason.CONTENT_FILTER,
}


class AnthropicProvider:
    """A Provider (see `lathe.llm.base`) for one model behind the Anthropic Messages API."""

    def __init__(
        self,
        model: str,
        base_url: str | None,
        api_key: str,
        *,
        api_key_env: str = "ANTHROPIC_API_KEY",
        timeouts: Timeouts = DEFAULT_TIMEOUTS,
        extra_headers: Mapping[str, str] | None = None,
        base_url_fix: str = "fix the base URL",
    ) -> None:
        self._model = model
        given = (base_url or DEFAULT_BASE_URL).rstrip("/")
        # The SDK adds its paths to the URL's: a query (?api-version=...) goes with every
        # request instead, after the path.
        url, self._query = without_query(given)
        url = url.rstrip("/")
        self._base_url = url[: -len("/v1")] if url.endswith("/v1") else url
        self._api_key = api_key
        self._timeouts = timeouts
        self._extra_headers = dict(extra_headers or {})
        # Messages name the endpoint with its credentials masked: too short to look like
        # secrets, a ?api_key= or a password was printed whole in every error.
        shown = masked_url(given)
        self._ctx = ErrorContext(model, shown, api_key_env, api_key, timeouts, base_url_fix)
        self._client = LazyClient(self._new_client, close=lambda client: client.close())
        self._turns: ChunkCache[Message, _Blocks, tuple[dict[str, Any], ...]] = ChunkCache(
            _blocks, _chunk_turns
        )

    @property
    def model(self) -> str:
        return self._model

    def stream(self, request: ModelRequest) -> AsyncIterator[StreamEvent]:
        attempt = within_total(
            self._stream(request), self._timeouts.total_s, before=self._client.get
        )
        return guarded(attempt, _to_provider_error, self._ctx)

    async def aclose(self) -> None:
        await self._client.close()

    # the wire

    async def _stream(self, request: ModelRequest) -> AsyncGenerator[StreamEvent, None]:
        import anthropic

        create = self._client.get().messages.with_raw_response.create
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # deprecation notices would print from core
            raw = await create(**self._params(request))
        reply = _Reply(self._model)
        reply.sent_bytes = int(raw.http_request.headers.get("content-length") or 0)
        response = await sniffed(raw.http_response)  # closing it closes the one sent
        if not is_event_stream(response):
            for event in await _whole_reply(response, self._ctx):
                for delta in reply.feed(event):
                    yield delta
            yield Completed(reply.finish(self._ctx.base_url))
            return
        # Over `response`, which may be a stream the content type did not say was one.
        events = anthropic.AsyncStream(cast_to=object, response=response, client=self._client.get())
        try:
            async for event in events:
                for delta in reply.feed(event):
                    yield delta
        finally:
            await events.close()
        yield Completed(reply.finish(self._ctx.base_url))

    def warm_up(self) -> None:
        """Import the SDK and build its client, with the parts the first request loads
        lazily (the messages resource, the HTTP transport), so that request does not wait."""
        self._client.get().messages  # noqa: B018 - loads the resource modules

    def _new_client(self) -> Any:
        import anthropic  # lazily: importing the SDK takes over a second

        # The SDK's own retries are off (lathe's retry policy is the one), and an unset
        # key is a placeholder: the SDK would otherwise go looking in the environment,
        # and the server's 401 then says what to set.
        return anthropic.AsyncAnthropic(
            api_key=self._api_key or "no-key-set",
            base_url=self._base_url,
            timeout=self._timeouts.for_httpx(),
            max_retries=0,
            default_headers=self._extra_headers or None,
            default_query=dict(self._query) or None,
        )

    def _params(self, request: ModelRequest) -> dict[str, Any]:
        extra = dict(request.extra)
        thinking = _thinking_config(extra.pop("thinking_budget", None), extra.pop("thinking", None))
        max_tokens = request.max_output_tokens or DEFAULT_MAX_TOKENS
        params: dict[str, Any] = {
            "model": self._model,
            "max_tokens": max_tokens,
            "messages": self._wire_conversation(request.messages),
            "stream": True,
        }
        if request.system:
            params["system"] = [{"type": "text", "text": request.system, "cache_control": _CACHE}]
        if request.tools:
            params["tools"] = wire_tools(request.tools)
        if thinking is not None:
            params["thinking"] = thinking
            budget = thinking.get("budget_tokens")
            if isinstance(budget, int) and budget >= max_tokens:
                params["max_tokens"] = budget + max_tokens
        elif request.temperature is not None:
            # Through extra_body: this SDK's `create` has no sampling parameters.
            extra.setdefault("temperature", request.temperature)
        if extra:
            params["extra_body"] = extra
        return params

    def _wire_conversation(self, messages: Sequence[Message]) -> list[dict[str, Any]]:
        """`wire_messages(messages)`, from each chunk's turns (`lathe.chunked`), converted
        and grouped once while the chunk stays the same object; only the turns where two
        chunks meet are merged again. The cached turns are never changed: what this
        request alters (a merge, a placeholder, the cache mark) is a new dict."""
        wire: list[dict[str, Any]] = []
        for turns in self._turns.map(messages):
            if wire and wire[-1]["role"] == turns[0]["role"]:
                wire[-1] = _merged(wire[-1], turns[0])
                wire.extend(turns[1:])
            else:
                wire.extend(turns)
        return _finished(wire)


def _thinking_config(budget: object, config: object) -> dict[str, Any] | None:
    if isinstance(config, Mapping):
        return dict(config)
    if isinstance(budget, int) and not isinstance(budget, bool) and budget > 0:
        return {"type": "enabled", "budget_tokens": budget}
    return None


# the internal message model -> the Messages API


def wire_tools(specs: Sequence[ToolSpec]) -> list[dict[str, Any]]:
    """Tool definitions, the last one marked as the end of the cached prefix."""
    tools: list[dict[str, Any]] = [
        {"name": s.name, "description": s.description, "input_schema": s.parameters} for s in specs
    ]
    if tools:
        tools[-1]["cache_control"] = _CACHE
    return tools


def wire_messages(messages: Sequence[Message]) -> list[dict[str, Any]]:
    """The `messages` list: roles alternating from a user turn, tool results grouped."""
    return _finished(list(_chunk_turns(tuple(_blocks(message) for message in messages))))


_Blocks = tuple[str, list[dict[str, Any]]]


def _chunk_turns(converted: tuple[_Blocks, ...]) -> tuple[dict[str, Any], ...]:
    """Messages' blocks as turns: consecutive messages of one role in one turn, a user
    turn's tool results first (the API wants them ahead of any text in it), a turn with
    no block holding a placeholder (the API refuses an empty one)."""
    turns: list[dict[str, Any]] = []
    for role, blocks in converted:
        if turns and turns[-1]["role"] == role:
            turns[-1]["content"].extend(blocks)
        else:
            turns.append({"role": role, "content": list(blocks)})
    for turn in turns:
        if turn["role"] == "user":
            turn["content"].sort(key=_results_first)
        if not turn["content"]:
            turn["content"].append(_PLACEHOLDERS[turn["role"]])
    return tuple(turns)


def _merged(earlier: dict[str, Any], later: dict[str, Any]) -> dict[str, Any]:
    """Two turns of one role as one, as `_chunk_turns` would have made it: placeholders
    dropped unless nothing else is left, tool results first (both turns are ordered
    already, and a stable sort keeps the order each had)."""
    placeholder = _PLACEHOLDERS[earlier["role"]]
    content = [b for b in (*earlier["content"], *later["content"]) if b is not placeholder]
    if earlier["role"] == "user":
        content.sort(key=_results_first)
    return {"role": earlier["role"], "content": content or [placeholder]}


def _results_first(block: dict[str, Any]) -> bool:
    return block["type"] != "tool_result"


def _finished(wire: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """`wire` as the API takes it: from a user turn, the last block marked for the cache.
    Changes `wire` itself, never a turn or block in it."""
    if wire and wire[0]["role"] != "user":
        wire.insert(0, {"role": "user", "content": [_text(_EMPTY_USER)]})
    if wire:
        *content, last = wire[-1]["content"]
        if last["type"] in ("text", "tool_result", "tool_use"):
            marked = {**last, "cache_control": _CACHE}
            wire[-1] = {"role": wire[-1]["role"], "content": [*content, marked]}
    return wire


def _blocks(message: Message) -> _Blocks:
    match message:
        case UserMessage():
            return "user", [_text(message.content)] if message.content else []
        case AssistantMessage():
            # Thinking first: the API requires it ahead of text and tool use.
            blocks = [_thinking_block(t) for t in message.thinking if t.text or t.signature]
            if message.text:
                blocks.append(_text(message.text))
            blocks.extend(_tool_use(call) for call in message.tool_calls)
            return "assistant", blocks
        case ToolResultMessage():
            block: dict[str, Any] = {"type": "tool_result", "tool_use_id": message.tool_call_id}
            if message.content:
                block["content"] = message.content
            if message.is_error:
                block["is_error"] = True
            return "user", [block]
        case _:
            assert_never(message)


def _text(text: str) -> dict[str, Any]:
    return {"type": "text", "text": text}


def _thinking_block(thinking: Thinking) -> dict[str, Any]:
    if thinking.signature and thinking.provider == THINKING_SOURCE:
        return {"type": "thinking", "thinking": thinking.text, "signature": thinking.signature}
    if thinking.signature and thinking.provider == REDACTED_THINKING_SOURCE:
        return {"type": "redacted_thinking", "data": thinking.signature}
    return _text(f"<earlier_reasoning>\n{thinking.text}\n</earlier_reasoning>")


def _tool_use(call: ToolCall) -> dict[str, Any]:
    try:
        arguments = json.loads(call.arguments) if call.arguments.strip() else {}
    except json.JSONDecodeError:
        arguments = None
    if not isinstance(arguments, dict):
        arguments = {"_raw_arguments": call.arguments}
    return {"type": "tool_use", "id": call.id, "name": call.name, "input": arguments}


# the Messages API stream -> the internal message model


@dataclass
class _Block:
    type: str
    text: list[str] = field(default_factory=list)
    signature: str = ""
    id: str = ""
    name: str = ""
    initial_input: object = None


class _Reply:
    """Assembles one reply from stream events (plain dicts, as the server sent them)."""

    def __init__(self, requested_model: str) -> None:
        self._model = requested_model
        self._blocks: dict[int, _Block] = {}
        self._usage: dict[str, int] = {}
        self._stop_reason: str | None = None
        self._stopped = False
        self.sent_bytes = 0  # the request's body, what usage is estimated from if need be

    def feed(self, event: object) -> list[StreamEvent]:
        if not isinstance(event, Mapping):
            return []
        match event.get("type"):
            case "message_start":
                message = event.get("message")
                if isinstance(message, Mapping):
                    if isinstance(message.get("model"), str) and message["model"]:
                        self._model = message["model"]
                    self._take_usage(message.get("usage"))
            case "content_block_start":
                block = event.get("content_block")
                if isinstance(block, Mapping):
                    self._start(_index(event), block)
            case "content_block_delta":
                delta = event.get("delta")
                if isinstance(delta, Mapping):
                    return self._delta(_index(event), delta)
            case "message_delta":
                delta = event.get("delta")
                if isinstance(delta, Mapping) and isinstance(delta.get("stop_reason"), str):
                    self._stop_reason = delta["stop_reason"]
                self._take_usage(event.get("usage"))
            case "message_stop":
                self._stopped = True
            case _:
                pass  # ping, content_block_stop, and event types added after this was written
        return []

    def _start(self, index: int, block: Mapping[str, Any]) -> None:
        kind = str(block.get("type"))
        slot = _Block(kind)
        if kind == "text" and isinstance(block.get("text"), str):
            slot.text.append(block["text"])
        elif kind == "thinking":
            slot.text.append(str(block.get("thinking") or ""))
            slot.signature = str(block.get("signature") or "")
        elif kind == "redacted_thinking":
            slot.signature = str(block.get("data") or "")
        elif kind == "tool_use":
            slot.id = str(block.get("id") or "")
            slot.name = str(block.get("name") or "")
            slot.initial_input = block.get("input")
        self._blocks[index] = slot

    def _delta(self, index: int, delta: Mapping[str, Any]) -> list[StreamEvent]:
        slot = self._blocks.setdefault(index, _Block("unknown"))
        match delta.get("type"):
            case "text_delta" if isinstance(delta.get("text"), str):
                slot.text.append(delta["text"])
                return [TextDelta(delta["text"])] if slot.type == "text" else []
            case "thinking_delta" if isinstance(delta.get("thinking"), str):
                slot.text.append(delta["thinking"])
                return [ThinkingDelta(delta["thinking"])]
            case "signature_delta" if isinstance(delta.get("signature"), str):
                slot.signature += delta["signature"]
            case "input_json_delta" if isinstance(delta.get("partial_json"), str):
                slot.text.append(delta["partial_json"])
            case _:
                pass  # citations and deltas of block types lathe does not keep
        return []

    def _take_usage(self, raw: object) -> None:
        if isinstance(raw, Mapping):
            for key, value in raw.items():
                if isinstance(value, int) and not isinstance(value, bool):
                    self._usage[key] = max(value, 0)  # a negative count made the cost one

    def finish(self, base_url: str) -> AssistantMessage:
        if not self._stopped:
            raise Transport(
                f"the stream ended before the model finished (no message_stop from "
                f"{base_url}); the connection was probably cut"
            )
        blocks = [self._blocks[i] for i in sorted(self._blocks)]
        calls = tuple(_call(b) for b in blocks if b.type == "tool_use")
        if self._stop_reason is None:
            stop = StopReason.TOOL_USE if calls else StopReason.END
        else:
            stop = _STOP_REASONS.get(self._stop_reason, StopReason.END)
        thinking = tuple(
            Thinking(text="".join(b.text), signature=b.signature or None, provider=THINKING_SOURCE)
            if b.type == "thinking"
            else Thinking(text="", signature=b.signature, provider=REDACTED_THINKING_SOURCE)
            for b in blocks
            if b.type == "thinking" or (b.type == "redacted_thinking" and b.signature)
        )
        text = "".join("".join(b.text) for b in blocks if b.type == "text")
        reported = Usage(
            input_tokens=self._usage.get("input_tokens", 0),
            output_tokens=self._usage.get("output_tokens", 0),
            cache_read_tokens=self._usage.get("cache_read_input_tokens", 0),
            cache_write_tokens=self._usage.get("cache_creation_input_tokens", 0),
        )
        written = text + "".join(t.text for t in thinking)
        return AssistantMessage(
            text=text,
            thinking=thinking,
            tool_calls=calls,
            stop_reason=stop,
            usage=reported_or_estimated(reported, self.sent_bytes, written, calls),
            model=self._model,
        )


async def _whole_reply(response: Any, ctx: ErrorContext) -> list[dict[str, Any]]:
    """The events of a 200 reply that is not a stream: a whole message (a server that
    ignored `stream: true`) as the events its stream would have had, an error it reports
    raised as the error it stands for, anything else (a network's login page, another
    API's JSON) raised as `not_a_reply`. Read as a stream, each had ended without
    message_stop: "the connection was probably cut", five times over."""
    json_body = is_json(response)
    try:
        raw = await response.aread() if json_body else await body_start(response)
    finally:
        await response.aclose()
    try:
        body = json.loads(raw) if json_body else None
    except ValueError:
        body = None
    if isinstance(body, Mapping) and body.get("error"):
        raise stream_error(body, ctx, streamed=False)
    if not (
        isinstance(body, Mapping)
        and body.get("type") == "message"
        and isinstance(body.get("content"), list)
    ):
        raise not_a_reply(ctx, content_type(response), raw)
    events: list[dict[str, Any]] = [{"type": "message_start", "message": {**body, "content": []}}]
    blocks = [block for block in body["content"] if isinstance(block, Mapping)]
    for index, block in enumerate(blocks):
        start: Mapping[str, Any] = block
        deltas = []  # text and thinking come as deltas too, so a face shows them
        for field_name, delta_type in (("text", "text_delta"), ("thinking", "thinking_delta")):
            if block.get("type") == field_name and isinstance(block.get(field_name), str):
                start = {**block, field_name: ""}
                deltas.append({"type": delta_type, field_name: block[field_name]})
        events.append({"type": "content_block_start", "index": index, "content_block": start})
        events += [{"type": "content_block_delta", "index": index, "delta": d} for d in deltas]
    events.append({"type": "message_delta", "delta": {"stop_reason": body.get("stop_reason")}})
    events.append({"type": "message_stop"})
    return events


def _index(event: Mapping[str, Any]) -> int:
    index = event.get("index")
    return index if isinstance(index, int) else -1


def _call(block: _Block) -> ToolCall:
    arguments = "".join(block.text)
    if not arguments and isinstance(block.initial_input, Mapping) and block.initial_input:
        arguments = json.dumps(block.initial_input)  # a server that sent the input whole
    return ToolCall(
        id=block.id or f"toolu_{uuid.uuid4().hex[:24]}",
        name=block.name,
        arguments=arguments or "{}",
    )


# the one boundary where the SDK's and httpx's exceptions become lathe's errors


def _to_provider_error(exc: BaseException, ctx: ErrorContext) -> ProviderError | None:
    """The lathe error for an SDK/httpx/OS exception, or None when it is not one of those
    (a bug in lathe, left to surface as one)."""
    import anthropic
    import httpx2

    if isinstance(exc, ProviderError):
        return exc
    if isinstance(exc, anthropic.APIStatusError):
        if exc.status_code < 400:  # an `error` event inside a 200 stream
            error = stream_error(exc.body, ctx)
            return error.reworded(str(error), request_id=request_id(exc.response.headers))
        if exc.status_code == 404:
            said = scrub(server_message(exc), ctx)
            return BadRequest(
                f"{ctx.base_url} (HTTP 404) answered 404 for model {ctx.model!r}: {said}. "
                "Check the model name, and that the base URL is where the API starts, "
                "without /v1",
                status=404,
                request_id=request_id(exc.response.headers),
            )
        return from_status(exc.status_code, exc.response.headers, server_message(exc), ctx)
    if isinstance(
        exc, TotalTimeExceeded | anthropic.APITimeoutError | httpx2.TimeoutException | TimeoutError
    ):
        return timed_out(exc, ctx)
    if isinstance(exc, anthropic.APIConnectionError | httpx2.TransportError | OSError):
        return connection_error(exc, ctx)
    if isinstance(exc, json.JSONDecodeError):
        return Transport(f"{ctx.base_url} sent a stream event that is not valid JSON")
    if isinstance(exc, anthropic.APIError):
        return stream_error(server_message(exc), ctx)
    if isinstance(exc, anthropic.AnthropicError | httpx2.HTTPError):
        return BadRequest(scrub(f"the Anthropic client refused the request: {exc}", ctx))
    return None
