"""JSON-schema action mode: tool use for models that cannot be trusted with native tool
calls (small local models).

`JsonActionProvider` wraps any provider whose endpoint honours `response_format` with a
JSON schema (llama.cpp turns it into a grammar, so every reply is well-formed). The
tools are described in the system prompt instead of the `tools` parameter; each reply
is exactly one action — `{"tool": NAME, "arguments": {...}}` or
`{"tool": "finish", "message": TEXT}` — which the wrapper turns back into an ordinary
`AssistantMessage` with one tool call or a final answer, so the loop cannot tell the
difference. Earlier calls and results are rendered as plain text turns, because the
endpoint is told about no tools.
"""

from __future__ import annotations

import itertools
import json
from collections.abc import AsyncIterator, Collection, Sequence
from dataclasses import replace
from typing import Any

from pydantic_core import from_json

from lathe.llm.base import Completed, ModelRequest, Provider, StreamEvent
from lathe.types import (
    AssistantMessage,
    Message,
    StopReason,
    ToolCall,
    ToolResultMessage,
    ToolSpec,
    UserMessage,
)

FINISH = "finish"
_ids = itertools.count(1)


def action_schema(tools: Sequence[ToolSpec]) -> dict[str, Any]:
    choices: list[dict[str, Any]] = [
        {
            "type": "object",
            "properties": {"tool": {"const": spec.name}, "arguments": _strict(spec.parameters)},
            "required": ["tool", "arguments"],
            "additionalProperties": False,
        }
        for spec in tools
    ]
    choices.append(
        {
            "type": "object",
            "properties": {"tool": {"const": FINISH}, "message": {"type": "string"}},
            "required": ["tool", "message"],
            "additionalProperties": False,
        }
    )
    return {"anyOf": choices}


def _strict(parameters: dict[str, Any]) -> dict[str, Any]:
    schema = dict(parameters)
    schema.setdefault("type", "object")
    schema["additionalProperties"] = False
    return schema


def _tools_text(tools: Sequence[ToolSpec]) -> str:
    lines = [
        "Reply with exactly one JSON object per message: either a tool call",
        '{"tool": "<name>", "arguments": {...}} or, when the task is done,',
        '{"tool": "finish", "message": "<what you did>"}. Tools:',
    ]
    for spec in tools:
        params = spec.parameters.get("properties", {})
        required = set(spec.parameters.get("required", []))
        args = ", ".join(f"{n}{'' if n in required else '?'}" for n in params)
        lines.append(f"- {spec.name}({args}): {spec.description}")
    return "\n".join(lines)


def render_history(messages: Sequence[Message]) -> list[Message]:
    """Tool calls and results as plain text turns, for an endpoint told of no tools."""
    rendered: list[Message] = []
    for message in messages:
        match message:
            case AssistantMessage(tool_calls=calls) if calls:
                text = "\n".join(
                    json.dumps({"tool": c.name, "arguments": c.parsed_arguments()}) for c in calls
                )
                rendered.append(AssistantMessage(text=text, model=message.model))
            case ToolResultMessage(name=name, content=content, is_error=is_error):
                label = "error" if is_error else "result"
                rendered.append(UserMessage(content=f"[{name} {label}]\n{content}"))
            case AssistantMessage():
                action = {"tool": FINISH, "message": message.text}
                rendered.append(AssistantMessage(text=json.dumps(action), model=message.model))
            case _:
                rendered.append(message)
    return _merge_users(rendered)


def _merge_users(messages: list[Message]) -> list[Message]:
    merged: list[Message] = []
    for message in messages:
        if merged and isinstance(message, UserMessage) and isinstance(merged[-1], UserMessage):
            merged[-1] = UserMessage(content=f"{merged[-1].content}\n\n{message.content}")
        else:
            merged.append(message)
    return merged


def parse_action(text: str, model: str | None) -> AssistantMessage:
    """The reply as the loop expects it. Text that is not an action is a final answer."""
    try:
        action = json.loads(text)
    except json.JSONDecodeError:
        return AssistantMessage(text=text, model=model)
    if not isinstance(action, dict) or action.get("tool") in (None, FINISH):
        message = action.get("message", text) if isinstance(action, dict) else text
        return AssistantMessage(text=str(message), model=model)
    arguments = action.get("arguments", {})
    call = ToolCall(
        id=f"action_{next(_ids)}",
        name=str(action["tool"]),
        arguments=json.dumps(arguments) if not isinstance(arguments, str) else arguments,
    )
    return AssistantMessage(tool_calls=(call,), stop_reason=StopReason.TOOL_USE, model=model)


# Why a reply ended that the action inside cannot say: the model did not finish it.
_UNFINISHED = (StopReason.MAX_TOKENS, StopReason.UNREADABLE, StopReason.CONTENT_FILTER)


def action_reply(message: AssistantMessage, tools: Collection[str]) -> AssistantMessage:
    """The action `message` holds, as the loop expects it, with `message`'s usage and,
    when the model did not finish it (cut by the output limit, unparsed by the server,
    stopped by the content filter), its stop reason: without it a cut action was taken
    as the final answer, half a JSON object."""
    if message.stop_reason is StopReason.MAX_TOKENS:
        parsed = _cut_action(message.text, message.model, tools)
    else:
        parsed = parse_action(message.text, message.model)
    unfinished = message.stop_reason in _UNFINISHED
    stop_reason = message.stop_reason if unfinished else parsed.stop_reason
    return replace(parsed, usage=message.usage, stop_reason=stop_reason)


def _cut_action(text: str, model: str | None, tools: Collection[str]) -> AssistantMessage:
    """An action cut by the output limit: a call to one of `tools` (with the arguments
    written so far; `CutOffReply` runs no call of a cut reply, it asks for a smaller
    step), what a `finish` said so far, or else the text as it is."""
    try:
        action = from_json(text, allow_partial="trailing-strings")
    except ValueError:
        action = None
    if not isinstance(action, dict):
        return AssistantMessage(text=text, model=model)
    if action.get("tool") == FINISH:
        return AssistantMessage(text=str(action.get("message", "")), model=model)
    if action.get("tool") not in tools:  # no tool, or its name cut short
        return AssistantMessage(text=text, model=model)
    arguments = action.get("arguments", {})
    call = ToolCall(
        id=f"action_{next(_ids)}",
        name=str(action["tool"]),
        arguments=json.dumps(arguments) if not isinstance(arguments, str) else arguments,
    )
    return AssistantMessage(tool_calls=(call,), model=model)


class JsonActionProvider:
    def __init__(self, inner: Provider) -> None:
        self._inner = inner

    @property
    def model(self) -> str:
        return self._inner.model

    async def stream(self, request: ModelRequest) -> AsyncIterator[StreamEvent]:
        if not request.tools:  # e.g. a compaction summary: plain text is what is wanted
            async for event in self._inner.stream(
                replace(request, messages=render_history(request.messages))
            ):
                yield event
            return
        wrapped = replace(
            request,
            system=f"{request.system}\n\n{_tools_text(request.tools)}",
            messages=render_history(request.messages),
            tools=[],
            extra={
                **request.extra,
                "response_format": {
                    "type": "json_schema",
                    "json_schema": {"name": "action", "schema": action_schema(request.tools)},
                },
            },
        )
        # The raw JSON is not for the user's eyes; only the parsed action is passed on.
        names = {spec.name for spec in request.tools}
        async for event in self._inner.stream(wrapped):
            if isinstance(event, Completed):
                yield Completed(action_reply(event.message, names))

    async def aclose(self) -> None:
        await self._inner.aclose()
