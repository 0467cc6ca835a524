"""Tool calls a model wrote as text, read as the calls they are.

Qwen and Hermes style models behind a server without their tool-call parser (Ollama's
or vLLM's, not configured) write `<tool_call>{"name": ..., "arguments": {...}}</tool_call>`
in the reply's text, or a reply that is nothing but one fenced JSON call. Taken as a
final answer, the run ended at once with nothing done. Only the unmistakable forms are
read — a tag, or a reply opening with one fenced call — and only for tools the request
offered; anything else stays text.

Small slips are read where the intent is unambiguous: a line break written raw inside a
string, the repairs tool arguments get (trailing commas, closing braces missing), a tag
never closed at the end of the reply, and a tool name differing only in case or by a
`functions.` prefix when just one tool matches. A call lathe still cannot read (single
quotes, a tool there is none of, a string left open) is not taken as the answer: the
reply is `StopReason.UNREADABLE`, keeping its text, and the model is asked to write it
again (`agent.replies.UnreadableReply`).
"""

from __future__ import annotations

import json
import re
import secrets
from collections.abc import Collection
from dataclasses import replace
from typing import Any

from lathe.llm.arguments import parse_arguments
from lathe.types import AssistantMessage, StopReason, ToolCall

# A tag's body ends at its closing tag, at the next tag, or (never closed) at the end.
_TAGGED = re.compile(r"<tool_call>(.*?)(?:</tool_call>|(?=<tool_call>)|\Z)", re.DOTALL)
_TAG = re.compile(r"</?tool_call>")
# A reply opening with one fenced JSON object (what follows the fence is its text).
_OPENING_FENCE = re.compile(r"\A\s*```(?:json)?\s*(\{.*?\})\s*```", re.DOTALL)
# A reply opening as one fenced call, the fence closed or not (a cut one is not).
_FENCED_CALL = re.compile(r'\A\s*```(?:json)?\s*\{\s*"name"\s*:')
_PREFIX = "functions."  # OpenAI's namespace for tools, as some models write it


class _Unreadable(Exception):
    """A text call lathe cannot read."""


def with_text_calls(
    message: AssistantMessage, tools: Collection[str], max_calls: int | None = None
) -> AssistantMessage:
    """`message` with the calls its text holds as its calls (and without them in its
    text), at most `max_calls` of them (the profile's calls per reply); `message` itself
    when it has native calls, was cut by the output limit (its last call may be half
    written: `CutOffReply` answers it), or its text holds none. A text call that cannot
    be read makes it `StopReason.UNREADABLE`, its text as it was."""
    text = message.text
    if message.tool_calls or not tools or message.stop_reason is StopReason.MAX_TOKENS:
        return message
    if "tool_call>" not in text and "```" not in text:
        return message
    if _TAG.search(text):
        bodies, rest = [found.group(1) for found in _TAGGED.finditer(text)], _TAGGED.sub("", text)
    elif (fence := _OPENING_FENCE.match(text)) and _json_object(fence.group(1)) is not None:
        bodies, rest = [fence.group(1)], text[fence.end() :]
        if _envelope(bodies[0], tools) is None:  # a JSON answer, not a call
            return message
    elif _FENCED_CALL.match(text):  # a fenced call whose fence or JSON is broken
        return replace(message, stop_reason=StopReason.UNREADABLE)
    else:
        return message
    try:
        calls = tuple(_call(body, tools) for body in bodies[:max_calls])
    except _Unreadable:
        return replace(message, stop_reason=StopReason.UNREADABLE)
    if not calls:  # a closing tag alone: the rest of a call cut off before
        return replace(message, stop_reason=StopReason.UNREADABLE)
    return replace(message, text=rest.strip(), tool_calls=calls, stop_reason=StopReason.TOOL_USE)


def holds_text_call(text: str) -> bool:
    """Whether a reply cut by the output limit was writing a call as text: it holds a
    `<tool_call>` tag, or opens as one fenced JSON call. None of it can run."""
    return bool(_TAG.search(text) or _FENCED_CALL.match(text))


def _call(body: str, tools: Collection[str]) -> ToolCall:
    envelope = _envelope(body, tools)
    if envelope is None:
        raise _Unreadable
    name, arguments = envelope
    written = arguments if isinstance(arguments, str) else json.dumps(arguments)
    # An id of its own: one reused across turns points pruned results at the wrong call.
    return ToolCall(id=f"call_{secrets.token_hex(8)}", name=name, arguments=written)


def _envelope(body: str, tools: Collection[str]) -> tuple[str, Any] | None:
    """The tool `body` calls and its arguments; None when it is no call to one of
    `tools`."""
    value = _json_object(body.strip())
    if value is None or not isinstance(name := value.get("name"), str):
        return None
    tool = _tool_named(name, tools)
    if tool is None:
        return None
    return tool, value.get("arguments", value.get("parameters", {}))


def _json_object(text: str) -> dict[str, Any] | None:
    """`text` read as a JSON object: with control characters in its strings allowed (a
    line break written raw), else repaired as tool arguments are."""
    try:
        value = json.loads(text, strict=False)
    except ValueError:
        value = parse_arguments(text).value
    return value if isinstance(value, dict) else None


def _tool_named(name: str, tools: Collection[str]) -> str | None:
    """The one tool `name` means: itself, or the only one it matches in any case with or
    without a `functions.` prefix."""
    if name in tools:
        return name
    bare = name.removeprefix(_PREFIX).casefold()
    matching = [tool for tool in tools if tool.casefold() == bare]
    return matching[0] if len(matching) == 1 else None
