"""Tool calls written as text that are slightly malformed: each was taken as the final
answer (`lathe run` ended "unverified" with the raw `<tool_call>` as its answer, or was
told its verify failed "though it said it was done"), never read nor sent back."""

from __future__ import annotations

import json

import pytest

from lathe.llm.text_calls import holds_text_call, with_text_calls
from lathe.types import AssistantMessage, StopReason

TOOLS = ("read", "edit", "bash")
EDIT = {"path": "calc.py", "old_string": "    return a - b", "new_string": "    return a + b"}


def _read(text: str, tools=TOOLS) -> AssistantMessage:
    return with_text_calls(AssistantMessage(text=text), tools)


def _tagged(body: str) -> str:
    return f"<tool_call>\n{body}\n</tool_call>"


def test_a_line_break_written_raw_inside_a_string_is_read():
    body = (
        '{"name": "edit", "arguments": {"path": "calc.py", '
        '"old_string": "def add(a, b):\n    return a - b", '
        '"new_string": "def add(a, b):\n    return a + b"}}'
    )
    reply = _read(_tagged(body))
    assert reply.stop_reason is StopReason.TOOL_USE
    (call,) = reply.tool_calls
    assert call.name == "edit"
    assert json.loads(call.arguments)["new_string"] == "def add(a, b):\n    return a + b"


def test_a_trailing_comma_is_read_and_one_inside_a_string_is_kept():
    body = (
        '{"name": "edit", "arguments": {"path": "calc.py", "old_string": "x = [1,]", '
        '"new_string": "x = [1, 2,]",},}'
    )
    (call,) = _read(_tagged(body)).tool_calls
    assert json.loads(call.arguments) == {
        "path": "calc.py", "old_string": "x = [1,]", "new_string": "x = [1, 2,]",
    }  # fmt: skip


@pytest.mark.parametrize("written", ["edit", "functions.edit"])
def test_a_tool_name_exactly_or_after_the_functions_prefix_is_the_tool(written):
    (call,) = _read(_tagged(json.dumps({"name": written, "arguments": EDIT}))).tool_calls
    assert call.name == "edit"
    assert json.loads(call.arguments) == EDIT


def test_a_name_two_tools_differ_from_only_in_case_is_not_guessed():
    text = _tagged(json.dumps({"name": "READ", "arguments": {"path": "a"}}))
    reply = _read(text, tools=("read", "Read"))
    assert not reply.tool_calls and reply.stop_reason is StopReason.UNREADABLE


def test_an_unclosed_tag_ending_the_reply_is_read():
    text = "<tool_call>\n" + json.dumps({"name": "edit", "arguments": EDIT})
    reply = _read(text)
    assert [c.name for c in reply.tool_calls] == ["edit"]
    assert reply.text == ""


@pytest.mark.parametrize(
    "body",
    [
        "{'name': 'edit', 'arguments': {'path': 'calc.py'}}",  # single quotes: not guessed
        '{"name": "nope", "arguments": {}}',  # no such tool
        '{"name": "edit", "arguments": {"path": "calc.py", "old_string": "a -',  # left open
        '{"name": "edit", "path": "calc.py"}',  # no arguments
        '{"name": "Edit", "arguments": {"path": "calc.py"}}',  # names no tool exactly
    ],
)
def test_a_tag_that_cannot_be_read_is_unreadable_not_an_answer(body):
    text = f"I will fix it.\n{_tagged(body)}"
    reply = _read(text)
    assert not reply.tool_calls
    assert reply.stop_reason is StopReason.UNREADABLE
    assert reply.text == text  # the model is shown what it wrote


@pytest.mark.parametrize(
    "text",
    [
        # A closing tag alone is text (a cut text call is asked for whole, not continued).
        'string": "    return a + b"}}\n</tool_call>',
        'I will fix it.\n<tool_call>\nedit(path="calc.py")\n</tool_call>',  # no JSON
        "I will fix it.\n<tool_call>\n[1, 2]\n</tool_call>",
    ],
)
def test_a_tag_opening_no_json_object_is_text(text):
    assert _read(text) == AssistantMessage(text=text)


def test_one_unreadable_tag_makes_the_whole_reply_unreadable():
    text = _tagged(json.dumps({"name": "read", "arguments": {"path": "a"}})) + _tagged("{oops}")
    reply = _read(text)
    assert not reply.tool_calls and reply.stop_reason is StopReason.UNREADABLE


@pytest.mark.parametrize(
    "text",
    [
        '```json\n{"version": 2, "name": "calc"}\n```',  # a JSON answer, not a call
        '```json\n{"name": "calc", "version": 2}\n```',
        '```json\n{"name": "nope", "arguments": {}}\n```',  # names no tool: not a call
        '```json\n{"a": 1,\n```',  # broken JSON that names no call
        # A fenced call lathe cannot read is text: it may be a sample, never asked again.
        '```json\n{"name": "edit", "arguments": {"path": "calc.py",\n```',
        '```json\n{"name": "edit", "arguments": {"path": \'calc.py\'}}\n```',
        '```json\n{"name": "edit", "arguments": {"path": "calc.py"}}',  # never closed
        "Use `add(a, b)`: it returns a + b.",
    ],
)
def test_a_reply_that_is_no_call_stays_an_answer(text):
    reply = _read(text)
    assert reply == AssistantMessage(text=text)


def test_a_reply_that_is_one_fenced_call_is_read():
    text = f"```json\n{json.dumps({'name': 'edit', 'arguments': EDIT})}\n```\n"
    reply = _read(text)
    assert [c.name for c in reply.tool_calls] == ["edit"]
    assert reply.text == ""


def test_a_fenced_call_with_a_raw_line_break_is_read():
    text = '```json\n{"name": "edit", "arguments": {"path": "calc.py", "old_string": "a\nb"}}\n```'
    (call,) = _read(text).tool_calls
    assert json.loads(call.arguments)["old_string"] == "a\nb"


@pytest.mark.parametrize(
    ("text", "holds"),
    [
        ('<tool_call>\n{"name": "edit", "arguments": {"path": "calc.py", "new_', True),
        ('Fixing it.\n<tool_call>{"name": "read"}</tool_call>\nNow I', True),
        ('```json\n{"name": "edit", "arguments": {"path": "ca', True),
        ('```json\n{"version": 2, "na', False),
        ("The fix is to change the minus to a plus, and th", False),
    ],
)
def test_a_cut_reply_holding_a_text_call_is_known(text, holds):
    assert holds_text_call(text) is holds
