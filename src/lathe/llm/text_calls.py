"""Tool calls a model wrote as text, read as the calls they are.

Qwen and Hermes style models behind a server without their tool-call parser (Ollama's
or vLLM's, not configured) write `<tool_call>{"name": ..., "arguments": {...}}</tool_call>`
in the reply's text, or a reply that is nothing but one fenced JSON call. Taken as a
final answer, the run ended at once with nothing done. An answer may show such a call
too (explaining the format, a README, a package.json), and running it would run what
the model only wrote about, so only the unmistakable forms are read, and only for tools
the request offered by their exact name (or it after `functions.`):

- a `<tool_call>` tag opening a JSON object, where a call is written: at the start of a
  line, or right after the call before it; never one quoted in a code fence or inline
  code, nor one inside a sentence. Its body ends at `</tool_call>`; a tag never closed
  is read only when it is the whole reply (what follows prose is an example);
- a reply that is one fenced JSON object and nothing else.

The JSON must be exactly a call — `name` and `arguments` (or `parameters`), nothing else
— read with the slips whose intent is clear: a line break written raw inside a string,
and the repairs tool arguments get (trailing commas, closing braces missing). A tag that
opens JSON yet is no call lathe can read (single quotes, a string left open, a tool there
is none of) is not taken as the answer: the reply is `StopReason.UNREADABLE`, keeping its
text, and the model is asked to write it again (`agent.replies.UnreadableReply`). A
fenced object that is no call, and a tag no JSON follows, are the answer's text.
"""

from __future__ import annotations

import json
import re
import secrets
from collections.abc import Collection
from dataclasses import dataclass, replace
from typing import Any

from lathe.llm.arguments import parse_arguments
from lathe.types import AssistantMessage, StopReason, ToolCall

# Where a call may start: a tag opening JSON at the start of a line; or a code fence,
# whose content up to its closing fence is quoted.
_OPENING = re.compile(r"^[ \t]*(?:(```)|<tool_call>\s*(?=\{))", re.MULTILINE)
_NEXT_CALL = re.compile(r"[ \t]*<tool_call>\s*(?=\{)")  # right after a closing tag
_FENCE_LINE = re.compile(r"^[ \t]*```", re.MULTILINE)
_CLOSING = "</tool_call>"
_WHOLE_FENCE = re.compile(r"\A\s*```(?:json)?\s*(\{.*\})\s*```\s*\Z", re.DOTALL)
# A reply cut while opening as one fenced call: a name, then its arguments.
_FENCED_CALL = re.compile(
    r'\A\s*```(?:json)?\s*\{\s*"name"\s*:\s*"[^"\n]*"\s*,\s*"(?:arguments|parameters)"'
)
_PREFIX = "functions."  # OpenAI's namespace for tools, as some models write it


class _Unreadable(Exception):
    """A text call lathe cannot read."""


@dataclass(frozen=True)
class _Tag:
    start: int  # where `<tool_call>` starts
    end: int  # after `</tool_call>`, or the end of the text
    body: str  # from the `{` up to the closing tag
    closed: bool


def with_text_calls(
    message: AssistantMessage, tools: Collection[str], max_calls: int | None = None
) -> AssistantMessage:
    """`message` with the calls its text holds as its calls (and without them in its
    text), at most `max_calls` of them (the profile's calls per reply); `message` itself
    when it has native calls, was cut by the output limit (its last call may be half
    written: `CutOffReply` answers it), or its text holds none. A tagged call that cannot
    be read makes it `StopReason.UNREADABLE`, its text as it was."""
    text = message.text
    if message.tool_calls or not tools or message.stop_reason is StopReason.MAX_TOKENS:
        return message
    if "<tool_call>" not in text and "```" not in text:
        return message
    if tags := _tags(text):
        return _with_tagged_calls(message, tags, tools, max_calls)
    if (call := _fenced_call(text, tools)) is not None:
        return replace(message, text="", tool_calls=(call,), stop_reason=StopReason.TOOL_USE)
    return message


def holds_text_call(text: str) -> bool:
    """Whether a reply cut by the output limit was writing a call as text: it holds a
    tag opening JSON where a call is written, or is one fenced call so far. None of it
    can run."""
    if _tags(text):
        return True
    if (opening := _FENCED_CALL.match(text)) is None:
        return False
    closing = _FENCE_LINE.search(text, opening.end())
    return closing is None or not text[closing.end() :].strip()


def _with_tagged_calls(
    message: AssistantMessage, tags: list[_Tag], tools: Collection[str], max_calls: int | None
) -> AssistantMessage:
    text, last = message.text, tags[-1]
    if not last.closed and (len(tags) > 1 or text[: last.start].strip()):
        if len(tags) == 1:  # after prose: an example of a call, shown
            return message
        return replace(message, stop_reason=StopReason.UNREADABLE)
    try:
        calls = tuple(_tagged_call(tag.body, tools) for tag in tags[:max_calls])
    except _Unreadable:
        return replace(message, stop_reason=StopReason.UNREADABLE)
    rest, start = [], 0
    for tag in tags:
        rest.append(text[start : tag.start])
        start = tag.end
    rest.append(text[start:])
    text = "".join(rest).strip()
    return replace(message, text=text, tool_calls=calls, stop_reason=StopReason.TOOL_USE)


def _tags(text: str) -> list[_Tag]:
    """The tags in `text` that open JSON where a call is written, in order: each at the
    start of a line or right after the one before, none inside a code fence."""
    tags: list[_Tag] = []
    position = 0
    while found := _OPENING.search(text, position):
        if found.group(1):  # a fence: skip to the line closing it
            closing = _FENCE_LINE.search(text, found.end())
            if closing is None:
                break
            position = closing.end()
            continue
        tags.append(_tag_at(text, found.start(), found.end()))
        while following := _NEXT_CALL.match(text, tags[-1].end):
            tags.append(_tag_at(text, following.start(), following.end()))
        position = tags[-1].end
    return tags


def _tag_at(text: str, start: int, body_start: int) -> _Tag:
    closing = text.find(_CLOSING, body_start)
    if closing < 0:
        return _Tag(start, len(text), text[body_start:], closed=False)
    return _Tag(start, closing + len(_CLOSING), text[body_start:closing], closed=True)


def _tagged_call(body: str, tools: Collection[str]) -> ToolCall:
    envelope = _envelope(body, tools, bare_name=True)
    if envelope is None:
        raise _Unreadable
    return _call(*envelope)


def _fenced_call(text: str, tools: Collection[str]) -> ToolCall | None:
    """The call a reply that is one fenced JSON object makes; None when it is none."""
    whole = _WHOLE_FENCE.match(text)
    envelope = _envelope(whole.group(1), tools) if whole else None
    return _call(*envelope) if envelope else None


def _call(name: str, arguments: dict[str, Any] | str) -> ToolCall:
    written = arguments if isinstance(arguments, str) else json.dumps(arguments)
    # An id of its own: one reused across turns points pruned results at the wrong call.
    return ToolCall(id=f"call_{secrets.token_hex(8)}", name=name, arguments=written)


def _envelope(
    body: str, tools: Collection[str], *, bare_name: bool = False
) -> tuple[str, dict[str, Any] | str] | None:
    """The tool `body` calls and its arguments; None unless it is exactly a call, a
    `name` of one of `tools` and its `arguments` (or `parameters`), and nothing else —
    or, with `bare_name` (inside a tag, which says a call is meant), the `name` alone,
    for a tool given no arguments."""
    value = _json_object(body.strip())
    if value is None:
        return None
    key = "arguments" if "arguments" in value else "parameters"
    if bare_name and value.keys() == {"name"}:
        value = {**value, key: {}}
    if value.keys() != {"name", key} or not isinstance(name := value["name"], str):
        return None
    tool = _tool_named(name, tools)
    arguments = value[key]
    if tool is None or not isinstance(arguments, dict | str):
        return None
    return tool, arguments


def _json_object(text: str) -> dict[str, Any] | None:
    """`text` read as a JSON object: with control characters in its strings allowed (a
    line break written raw), else repaired as tool arguments are."""
    try:
        value = json.loads(text, strict=False)
    except ValueError:
        value = parse_arguments(text).value
    return value if isinstance(value, dict) else None


def _tool_named(name: str, tools: Collection[str]) -> str | None:
    """The tool `name` is, exactly or after a `functions.` prefix; None for any other."""
    bare = name.removeprefix(_PREFIX)
    return bare if bare in tools else None
