"""A tool result marked an error reaches an OpenAI-compatible server with one "Error: "
before it, not two: lathe's own error results already start with it."""

from __future__ import annotations

from lathe.llm.openai_chat import _wire_message
from lathe.types import ToolResultMessage


def test_an_error_result_is_marked_once():
    ours = ToolResultMessage(tool_call_id="c", name="read", content="Error: no such file",
                             is_error=True)  # fmt: skip
    theirs = ToolResultMessage(tool_call_id="c", name="mcp__x__y", content="boom", is_error=True)

    assert _wire_message(ours)["content"] == "Error: no such file"
    assert _wire_message(theirs)["content"] == "Error: boom"
