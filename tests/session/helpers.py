"""Message builders shared by the session tests."""

from __future__ import annotations

import json

from lathe.types import (
    AssistantMessage,
    StopReason,
    ToolCall,
    ToolResultMessage,
    Usage,
    UserMessage,
)


def user(text: str) -> UserMessage:
    return UserMessage(content=text)


def reply(text: str = "", *calls: ToolCall, tokens: int = 0) -> AssistantMessage:
    return AssistantMessage(
        text=text,
        tool_calls=calls,
        stop_reason=StopReason.TOOL_USE if calls else StopReason.END,
        usage=Usage(input_tokens=tokens, output_tokens=tokens // 10),
        model="test-model",
    )


def call(call_id: str, name: str = "bash", **arguments: object) -> ToolCall:
    return ToolCall(id=call_id, name=name, arguments=json.dumps(arguments))


def result(call_id: str, content: str = "ok", name: str = "bash") -> ToolResultMessage:
    return ToolResultMessage(tool_call_id=call_id, name=name, content=content)
