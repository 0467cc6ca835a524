"""Tool calls a model wrote as text, read as the calls they are.

Qwen and Hermes style models behind a server without their tool-call parser (Ollama's
or vLLM's, not configured) write `<tool_call>{"name": ..., "arguments": {...}}</tool_call>`
in the reply's text, or a reply that is nothing but one fenced JSON call. Taken as a
final answer, the run ended at once with nothing done. Only the unmistakable forms are
read — a tag, or a whole reply that is one call — and only for tools the request
offered; anything else stays text.
"""

from __future__ import annotations

import json
import re
import secrets
from collections.abc import Collection
from dataclasses import replace

from lathe.types import AssistantMessage, StopReason, ToolCall

_TAGGED = re.compile(r"<tool_call>\s*(\{.*?\})\s*</tool_call>", re.DOTALL)
_WHOLE_FENCE = re.compile(r"\A\s*```(?:json)?\s*(\{.*\})\s*```\s*\Z", re.DOTALL)


def with_text_calls(
    message: AssistantMessage, tools: Collection[str], max_calls: int | None = None
) -> AssistantMessage:
    """`message` with the calls its text holds as its calls (and without them in its
    text), at most `max_calls` of them (the profile's calls per reply); `message` itself
    when it has native calls, was cut by the output limit (its last call may be half
    written: `CutOffReply` answers it), or its text holds none."""
    text = message.text
    if message.tool_calls or not tools or message.stop_reason is StopReason.MAX_TOKENS:
        return message
    if "<tool_call>" not in text and "```" not in text:
        return message
    bodies = [found.group(1) for found in _TAGGED.finditer(text)]
    rest = _TAGGED.sub("", text)
    if not bodies and (whole := _WHOLE_FENCE.match(text)):
        bodies, rest = [whole.group(1)], ""
    calls = [_call(body, tools) for body in bodies[:max_calls]]
    if not calls or None in calls:
        return message
    return replace(
        message,
        text=rest.strip(),
        tool_calls=tuple(call for call in calls if call is not None),
        stop_reason=StopReason.TOOL_USE,
    )


def _call(body: str, tools: Collection[str]) -> ToolCall | None:
    try:
        value = json.loads(body)
    except ValueError:
        return None
    if not isinstance(value, dict) or value.get("name") not in tools:
        return None
    arguments = value.get("arguments", value.get("parameters", {}))
    written = arguments if isinstance(arguments, str) else json.dumps(arguments)
    # An id of its own: one reused across turns points pruned results at the wrong call.
    return ToolCall(id=f"call_{secrets.token_hex(8)}", name=value["name"], arguments=written)
