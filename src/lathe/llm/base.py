"""The provider seam.

A provider turns a `ModelRequest` into an async stream of `StreamEvent`s. Contract:

- It yields zero or more `TextDelta`/`ThinkingDelta` as the reply arrives, then exactly
  one `Completed` carrying the whole `AssistantMessage` (text, tool calls assembled,
  usage, stop reason). Nothing follows `Completed`.
- It fails by raising a `lathe.errors.ProviderError` subclass, never an SDK or httpx
  exception. A stream that ends without a stop reason raises `Transport`.
- It never retries by itself: `lathe.llm.retry` owns that policy, so providers must turn
  their SDK's retries off.
- It never prints and never touches the conversation; the loop owns both.
"""

from __future__ import annotations

import re
from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass, field
from typing import Protocol

from lathe.types import AssistantMessage, Message, ToolCall, ToolSpec, Usage


@dataclass(frozen=True)
class ModelRequest:
    system: str
    messages: Sequence[Message]
    tools: Sequence[ToolSpec]
    max_output_tokens: int | None = None
    temperature: float | None = None
    extra: dict[str, object] = field(default_factory=dict)


@dataclass(frozen=True)
class TextDelta:
    text: str


@dataclass(frozen=True)
class ThinkingDelta:
    text: str


@dataclass(frozen=True)
class Completed:
    message: AssistantMessage


StreamEvent = TextDelta | ThinkingDelta | Completed


class Provider(Protocol):
    """One configured model endpoint. `model` is the wire model id it sends.

    A provider may also define `warm_up()`: the slow one-time setup of its first request
    (importing an SDK, building its client), safe to call from another thread while the
    run does other work; `make_provider` queues it on the warm-up thread (`lathe.warmup`).
    """

    @property
    def model(self) -> str: ...

    def stream(self, request: ModelRequest) -> AsyncIterator[StreamEvent]: ...

    async def aclose(self) -> None: ...


_SURROGATE = re.compile("[\ud800-\udfff]")


def has_surrogate(text: str) -> bool:
    """Whether `text` holds a surrogate, half of a pair or a whole one unjoined: a scan in
    C, not in Python (it runs per streamed delta and per request string)."""
    return _SURROGATE.search(text) is not None


def whole_text(text: str) -> str:
    """`text` with surrogate pairs joined and lone surrogates replaced (U+FFFD)."""
    if not has_surrogate(text):
        return text
    return text.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "replace")


def reported_or_estimated(
    reported: Usage | None, sent_bytes: int, written: str, calls: Sequence[ToolCall] = ()
) -> Usage:
    """The usage the server reported for a reply (its counts never below zero, which each
    provider sees to as it reads them), or an estimate when it reported nothing: no
    usage, or no input and no output token (`usage: {}` reads as zeros). The estimate is
    `agent.context`'s rule, 3 bytes a token, of the request's body (`sent_bytes`) and
    of what the reply wrote (text, thinking, the calls' names and arguments): counted as
    zero, the token and cost budgets never tripped."""
    if reported is not None and (reported.input_tokens or reported.output_tokens):
        return reported
    written += "".join(call.name + call.arguments for call in calls)
    return Usage(
        input_tokens=sent_bytes // 3 + 1,
        output_tokens=len(written.encode("utf-8", "replace")) // 3 + 1,
    )
