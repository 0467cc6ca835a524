"""Pure values shared by every layer: the internal message model.

Providers translate these to and from their wire protocols; the loop, the session
store and the faces only ever see these. Nothing here does I/O.

Each value is a frozen pydantic dataclass with slots: validated when built (unknown
fields refused, arguments by keyword only), equal and hashed by its fields, and without
a per-instance `__dict__`, because a long session holds hundreds of thousands of them.
Copy one with a change through `dataclasses.replace` (which validates the copy), and
read or write one as JSON through a `pydantic.TypeAdapter`: there are no `model_*`
methods.
"""

from __future__ import annotations

import json
from enum import StrEnum
from typing import Annotated, Any, Literal

from pydantic import ConfigDict, Field
from pydantic.dataclasses import dataclass

_FORBID = ConfigDict(extra="forbid")


@dataclass(frozen=True, slots=True, kw_only=True, config=_FORBID)
class Usage:
    """Tokens reported by the provider for one request (zeros when it reported none).

    Every provider normalises to one convention: `input_tokens` counts only uncached
    prompt tokens; cache reads and writes are counted apart, so the whole prompt is
    input + cache_read + cache_write."""

    input_tokens: int = 0
    output_tokens: int = 0
    cache_read_tokens: int = 0
    cache_write_tokens: int = 0

    def __add__(self, other: Usage) -> Usage:
        return Usage(
            input_tokens=self.input_tokens + other.input_tokens,
            output_tokens=self.output_tokens + other.output_tokens,
            cache_read_tokens=self.cache_read_tokens + other.cache_read_tokens,
            cache_write_tokens=self.cache_write_tokens + other.cache_write_tokens,
        )

    @property
    def total(self) -> int:
        """Every token of the request and its reply, cache reads and writes included: what
        budgets count and every face shows as "tokens" (it had been input + output here
        alone, so the transcript and the footer said 11,000 where a run's end said 101,000)."""
        return (
            self.input_tokens
            + self.output_tokens
            + self.cache_read_tokens
            + self.cache_write_tokens
        )


class StopReason(StrEnum):
    END = "end"  # the model finished its answer
    TOOL_USE = "tool_use"  # the model wants tool results
    MAX_TOKENS = "max_tokens"  # cut by the output limit
    CONTENT_FILTER = "content_filter"
    # What the model wrote as a tool call could not be read: by the server (llama-server:
    # "Failed to parse tool call arguments as JSON"; such a reply has no text and no call,
    # and is never part of the conversation), or by lathe, a call written as text
    # (`llm.text_calls`; its text is kept, so the model sees what it wrote). The model's
    # fault, not an outage.
    UNREADABLE = "unreadable"


@dataclass(frozen=True, slots=True, kw_only=True, config=_FORBID)
class ToolCall:
    """One call the model asked for. `arguments` is the JSON text as the model wrote it
    (or as lathe repaired it); the loop parses and validates it."""

    id: str
    name: str
    arguments: str = "{}"

    def parsed_arguments(self) -> dict[str, Any]:
        """Arguments as a dict for wire formats that need one; {} when not an object."""
        try:
            value = json.loads(self.arguments or "{}")
        except json.JSONDecodeError:
            return {}
        return value if isinstance(value, dict) else {}


@dataclass(frozen=True, slots=True, kw_only=True, config=_FORBID)
class Thinking:
    """Reasoning the model emitted. `signature` is vendor-specific and only replayed to
    the vendor that produced it; other vendors get the text as plain text."""

    text: str
    signature: str | None = None
    provider: str | None = None


@dataclass(frozen=True, slots=True, kw_only=True, config=_FORBID)
class UserMessage:
    role: Literal["user"] = "user"
    content: str
    origin: Literal["user", "lathe"] = "user"
    """"lathe" marks a note lathe inserted (the baseline check, verify feedback, a
    nudge): the model reads it as a user turn, but a transcript must not show it as
    something the person typed."""


@dataclass(frozen=True, slots=True, kw_only=True, config=_FORBID)
class AssistantMessage:
    role: Literal["assistant"] = "assistant"
    text: str = ""
    thinking: tuple[Thinking, ...] = ()
    tool_calls: tuple[ToolCall, ...] = ()
    stop_reason: StopReason = StopReason.END
    usage: Usage = Usage()
    model: str | None = None


@dataclass(frozen=True, slots=True, kw_only=True, config=_FORBID)
class ToolResultMessage:
    role: Literal["tool"] = "tool"
    tool_call_id: str
    name: str
    content: str
    is_error: bool = False


Message = Annotated[UserMessage | AssistantMessage | ToolResultMessage, Field(discriminator="role")]


@dataclass(frozen=True, slots=True, kw_only=True, config=_FORBID)
class ToolSpec:
    """What the model is told about a tool: name, description, JSON schema."""

    name: str
    description: str
    parameters: dict[str, Any]
