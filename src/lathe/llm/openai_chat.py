"""The OpenAI-compatible chat completions provider (OpenAI, vLLM, llama.cpp, Ollama,
DeepSeek, OpenRouter, LM Studio, ...), built on the official `openai` SDK.

What it sends: the system prompt as the first message, then the conversation; tools as
`{"type": "function", "function": {...}}`; `stream=True` with
`stream_options={"include_usage": true}`. Servers that reject `stream_options` get the
request again without it, and the provider remembers that for its lifetime.

What it reads: text deltas, `reasoning_content` (or `reasoning`) deltas as thinking,
tool-call deltas assembled by index, the finish reason and usage (absent usage is zero).
A server that ignores `stream=True` and answers one JSON body is read as one reply.

Decisions:
- Thinking from earlier replies is dropped on replay: chat completions has no field for
  it, DeepSeek rejects `reasoning_content` in requests, and sent as plain text the model
  would take its private reasoning for something it told the user.
- Usage follows the Anthropic convention shared by all providers: `input_tokens`
  excludes cached prompt tokens, which are counted in `cache_read_tokens`.
- The output limit is sent as `max_completion_tokens` to api.openai.com (its newer
  models reject `max_tokens`) and as `max_tokens` elsewhere (what compatible servers
  understand). `ModelRequest.extra` is merged into the request body as is.
- An empty API key sends a placeholder, because local servers need none and the SDK
  insists on one; a server that wants a key then answers 401, reported as AuthError.
- The SDK's own retries are off (`max_retries=0`): `lathe.llm.retry` owns retrying.
- Each stream is bounded by `timeouts` (`lathe.llm.timeouts`): the idle limit is the
  SDK's httpx timeout, the total a deadline around the whole attempt.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import AsyncGenerator, AsyncIterator, Mapping
from dataclasses import dataclass, field
from typing import Any, assert_never

from lathe.errors import Transport
from lathe.llm.base import Completed, ModelRequest, StreamEvent, TextDelta, ThinkingDelta
from lathe.llm.errors_map import (
    ErrorContext,
    guarded,
    mentions_stream_options,
    stream_error,
    to_provider_error,
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
_NO_KEY = "no-key-set"
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
    ) -> None:
        self._model = model
        # Resolved here, not by the SDK, so OPENAI_BASE_URL is read by config alone.
        self._base_url = (base_url or DEFAULT_BASE_URL).rstrip("/")
        self._api_key = api_key
        self._timeouts = timeouts
        self._extra_headers = dict(extra_headers or {})
        self._ctx = ErrorContext(model, self._base_url, api_key_env, api_key, timeouts)
        self._send_stream_options = True
        self._client: Any = None

    @property
    def model(self) -> str:
        return self._model

    def stream(self, request: ModelRequest) -> AsyncIterator[StreamEvent]:
        attempt = within_total(
            self._stream(request), self._timeouts.total_s, before=self._sdk_client
        )
        return guarded(attempt, to_provider_error, self._ctx)

    async def aclose(self) -> None:
        if self._client is not None:
            client, self._client = self._client, None
            await client.close()

    # the wire

    async def _stream(self, request: ModelRequest) -> AsyncGenerator[StreamEvent, None]:
        import openai

        raw = await self._open(request)
        reply = _Reply(self._model)
        content_type = raw.headers.get("content-type", "")
        if "json" in content_type and "event-stream" not in content_type:
            body = json.loads(await raw.http_response.aread())
            for event in reply.feed(_completion_as_chunk(body, self._ctx)):
                yield event
        else:
            chunks = raw.parse(to=openai.AsyncStream[object])
            try:
                async for chunk in chunks:
                    for event in reply.feed(chunk):
                        yield event
            finally:
                await chunks.close()
        yield Completed(reply.finish(self._base_url))

    async def _open(self, request: ModelRequest) -> Any:
        create = self._sdk_client().chat.completions.with_raw_response.create
        try:
            return await create(**self._params(request))
        except Exception as exc:
            if not (self._send_stream_options and mentions_stream_options(exc)):
                raise
        self._send_stream_options = False
        return await create(**self._params(request))

    def _sdk_client(self) -> Any:
        if self._client is None:
            import openai  # lazily: importing the SDK costs most of a second

            self._client = openai.AsyncOpenAI(
                api_key=self._api_key or _NO_KEY,
                base_url=self._base_url,
                timeout=self._timeouts.for_httpx(),
                max_retries=0,
                default_headers=self._extra_headers or None,
            )
        return self._client

    def _params(self, request: ModelRequest) -> dict[str, Any]:
        params: dict[str, Any] = {
            "model": self._model,
            "messages": wire_messages(request.system, request.messages),
            "stream": True,
        }
        if self._send_stream_options:
            params["stream_options"] = {"include_usage": True}
        if request.tools:
            params["tools"] = [wire_tool(spec) for spec in request.tools]
        if request.max_output_tokens is not None:
            limit_field = (
                "max_completion_tokens" if "api.openai.com" in self._base_url else "max_tokens"
            )
            params[limit_field] = request.max_output_tokens
        if request.temperature is not None:
            params["temperature"] = request.temperature
        if request.extra:
            params["extra_body"] = dict(request.extra)
        return params


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
            content = f"Error: {message.content}" if message.is_error else message.content
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

    def __init__(self, requested_model: str) -> None:
        self._model = requested_model
        self._text: list[str] = []
        self._thinking: list[str] = []
        self._calls: list[_PartialCall] = []
        self._finish_reason: str | None = None
        self._usage = Usage()

    def feed(self, chunk: object) -> list[StreamEvent]:
        if not isinstance(chunk, Mapping):
            return []
        if isinstance(chunk.get("model"), str) and chunk["model"]:
            self._model = chunk["model"]
        if isinstance(chunk.get("usage"), Mapping):
            self._usage = _usage(chunk["usage"])
        events: list[StreamEvent] = []
        for choice in chunk.get("choices") or ():
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
            self._thinking.append(reasoning)
            events.append(ThinkingDelta(reasoning))
        content = delta.get("content")
        if isinstance(content, str) and content:
            self._text.append(content)
            events.append(TextDelta(content))
        for call_delta in delta.get("tool_calls") or ():
            if isinstance(call_delta, Mapping):
                self._feed_call(call_delta)
        return events

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
        """The call a delta continues: same id, else same index (unless it brings a new
        id: some servers reuse index 0 for parallel calls), else, with neither, the
        latest call."""
        for slot in reversed(self._calls):
            if call_id and slot.id == call_id:
                return slot
            if index is not None and slot.index == index and not (call_id and slot.id):
                return slot
        if index is None and not call_id and self._calls:
            return self._calls[-1]
        slot = _PartialCall(index)
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
                id=slot.id or f"call_{uuid.uuid4().hex[:24]}",
                name=slot.name,
                arguments="".join(slot.arguments) or "{}",
            )
            for slot in self._calls
        )
        stop = _STOP_REASONS.get(self._finish_reason, StopReason.END)
        if calls and stop is StopReason.END:
            stop = StopReason.TOOL_USE
        thinking = "".join(self._thinking)
        return AssistantMessage(
            text="".join(self._text),
            thinking=(Thinking(text=thinking, provider=_THINKING_SOURCE),) if thinking else (),
            tool_calls=calls,
            stop_reason=stop,
            usage=self._usage,
            model=self._model,
        )


def _completion_as_chunk(body: object, ctx: ErrorContext) -> dict[str, Any]:
    """A whole (non-streamed) completion rewritten as one stream chunk."""
    if not isinstance(body, Mapping):
        raise Transport(f"{ctx.base_url} answered with JSON that is not a completion")
    if body.get("error"):
        error = body["error"]
        message = error.get("message") if isinstance(error, Mapping) else str(error)
        raise stream_error(str(message), ctx)
    choices = []
    for choice in body.get("choices") or ():
        if not isinstance(choice, Mapping):
            continue
        message = dict(choice.get("message") or {})
        calls = message.get("tool_calls") or []
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
