"""Prose and code samples in a final answer are not tool calls. Reading text-written calls
tolerantly took them as calls: an answer mentioning `<tool_call>` was unreadable (the
run could never end), and a fenced sample of a call, an unclosed tag after "write:" or a
package.json naming a tool was RUN."""

from __future__ import annotations

import json

import pytest

from lathe.llm.text_calls import holds_text_call, with_text_calls
from lathe.types import AssistantMessage, StopReason

TOOLS = ("bash", "read", "edit", "write", "task", "list_files")
LS = json.dumps({"name": "bash", "arguments": {"command": "ls"}})
DEPLOY = json.dumps({"name": "bash", "arguments": {"command": "make deploy"}})


def _read(text: str) -> AssistantMessage:
    return with_text_calls(AssistantMessage(text=text), TOOLS)


PROSE = {
    "mentions-the-tag": "Done. Qwen models write `<tool_call>` tags when the server has no "
    "parser; lathe now reads them.",
    "mentions-the-closing-tag": "The parser stops at `</tool_call>` now.",
    "tag-not-opening-json": "A reply may hold <tool_call> tags.\n<tool_call>\nsee above",
    "tag-in-a-readme-fence": "Here is the README section:\n\n```\nA model writes "
    f"<tool_call>{DEPLOY}</tool_call>\n```\n",
    "tag-in-inline-code": f"Qwen writes `<tool_call>{DEPLOY}</tool_call>` in its text.",
    "tag-in-a-sentence": f"A call looks like <tool_call>{DEPLOY}</tool_call> in the text.",
    "package-json-then-text": '```json\n{"name": "list_files", "version": "1.0"}\n```\n'
    "That is the package.json you asked for.",
    "package-json-whole": '```json\n{"name": "list_files", "version": "1.0"}\n```',
    "package-json-with-arguments-key": '```json\n{"name": "list_files", "arguments": {}, '
    '"version": "1.0"}\n```',
    "fenced-sample-then-text": '```json\n{"name": "Bash", "arguments": {"command": '
    '"make deploy"}}\n```\nThis is the format of a call.',
    "fenced-exact-name-then-text": f"```json\n{DEPLOY}\n```\nThis is the format of a call.",
    "fenced-whole-capitalised": '```json\n{"name": "Bash", "arguments": {"command": "ls"}}\n```',
    "fenced-broken": '```json\n{"name": "edit", "arguments": {"path": "calc.py",\n```',
    "fenced-never-closed": '```json\n{"name": "edit", "arguments": {"path": "calc.py"}}',
    "unclosed-mid-sentence": f"To call a tool, write <tool_call>{LS} and close it.",
    "unclosed-after-write": f"To call a tool, write:\n<tool_call>{LS}",
    "html-escaped": "The tag is &lt;tool_call&gt;",
}


@pytest.mark.parametrize("text", PROSE.values(), ids=PROSE.keys())
def test_prose_or_a_code_sample_stays_the_answer(text):
    assert _read(text) == AssistantMessage(text=text)


# Cut before its end, a reply opening as a call may still become one: the rest never can.
MAY_BE_A_CALL = {"unclosed-after-write", "fenced-whole-capitalised", "fenced-broken",
                 "fenced-never-closed", "package-json-with-arguments-key"}  # fmt: skip
NEVER_A_CALL = [key for key in PROSE if key not in MAY_BE_A_CALL]


@pytest.mark.parametrize("key", NEVER_A_CALL)
def test_a_cut_answer_holding_prose_or_a_sample_is_continued(key):
    assert not holds_text_call(PROSE[key])


@pytest.mark.parametrize(
    "text",
    [
        f"To call a tool, write:\n<tool_call>{LS[:20]}",
        '```json\n{"name": "Bash", "arguments": {"command": "ls',
    ],
)
def test_a_cut_reply_that_may_be_writing_a_call_is_not_continued(text):
    assert holds_text_call(text)  # its rest would never be read as a call


@pytest.mark.parametrize("written", ["Bash", "BASH", "functions.Bash"])
def test_a_tool_name_in_another_case_is_no_call(written):
    text = f"<tool_call>\n{json.dumps({'name': written, 'arguments': {'command': 'ls'}})}\n"
    reply = _read(text + "</tool_call>")
    assert not reply.tool_calls
    assert reply.stop_reason is StopReason.UNREADABLE  # a tag opening JSON: a call attempt


def test_a_tagged_call_without_arguments_takes_none():
    # Hermes-style models leave `arguments` out for a tool that takes none; inside a tag
    # it is a call all the same (it had been sent back as unreadable).
    reply = _read('<tool_call>\n{"name": "list_files"}\n</tool_call>')
    assert [(c.name, json.loads(c.arguments)) for c in reply.tool_calls] == [("list_files", {})]


def test_a_fenced_object_with_a_name_alone_is_no_call():
    assert not _read('```json\n{"name": "list_files"}\n```').tool_calls


def test_an_unclosed_tag_after_a_closed_one_is_not_guessed():
    text = f"<tool_call>\n{LS}\n</tool_call>\n<tool_call>\n{DEPLOY}"
    reply = _read(text)
    assert not reply.tool_calls and reply.stop_reason is StopReason.UNREADABLE


def test_a_call_after_a_short_line_is_read_and_the_line_kept():
    reply = _read(f"Listing the files.\n<tool_call>\n{LS}\n</tool_call>")
    assert [(c.name, json.loads(c.arguments)) for c in reply.tool_calls] == [
        ("bash", {"command": "ls"})
    ]
    assert reply.text == "Listing the files."


def test_calls_written_back_to_back_are_each_read():
    reply = _read(f"<tool_call>{LS}</tool_call><tool_call>{DEPLOY}</tool_call>")
    assert [json.loads(c.arguments)["command"] for c in reply.tool_calls] == ["ls", "make deploy"]


def test_a_call_after_a_fenced_sample_is_read_and_the_sample_is_not():
    text = f"Like this:\n```\n<tool_call>{DEPLOY}</tool_call>\n```\n<tool_call>\n{LS}\n</tool_call>"
    reply = _read(text)
    assert [json.loads(c.arguments)["command"] for c in reply.tool_calls] == ["ls"]
