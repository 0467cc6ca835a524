"""lathe's chat template, rendered with jinja2 the way llama-server's analyser renders it:
the tool-call section it derives must be the ```json fence the model writes."""

from __future__ import annotations

import json

import pytest

from lathe.local.server import TEMPLATE

jinja2 = pytest.importorskip("jinja2", reason="jinja2 is not installed")

TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "read",
            "description": "Read a file",
            "parameters": {
                "type": "object",
                "properties": {"path": {"type": "string"}},
                "required": ["path"],
            },
        },
    }
]
USER = {"role": "user", "content": "Fix the failing test."}


def render(messages: list[dict], *, tools: list[dict] | None = TOOLS, prompt: bool = False) -> str:
    template = jinja2.Environment().from_string(TEMPLATE.read_text())
    return template.render(messages=messages, tools=tools, add_generation_prompt=prompt)


def call(name: str, arguments: object, call_id: str = "c1") -> dict:
    return {"id": call_id, "type": "function", "function": {"name": name, "arguments": arguments}}


def _common_prefix(a: str, b: str) -> int:
    n = 0
    while n < min(len(a), len(b)) and a[n] == b[n]:
        n += 1
    return n


def diff_right(a: str, b: str) -> str:
    """What only `b` has, between the longest common prefix and suffix."""
    prefix = _common_prefix(a, b)
    suffix = _common_prefix(a[prefix:][::-1], b[prefix:][::-1])
    return b[prefix : len(b) - suffix]


def test_tool_call_section_is_a_json_fence() -> None:
    text = render([USER, {"role": "assistant", "content": "A_ASST_MSG I can help END_A"}])
    with_call = render(
        [
            USER,
            {
                "role": "assistant",
                "content": "",
                "tool_calls": [call("FFF_FIRST_FUN_F", {"AA_ARG": "XXXX"})],
            },
        ]
    )
    section = diff_right(text, with_call)
    assert section.startswith("```json\n")
    assert section.endswith("\n```")
    body = json.loads(section.removeprefix("```json\n").removesuffix("\n```"))
    assert body == {"name": "FFF_FIRST_FUN_F", "arguments": {"AA_ARG": "XXXX"}}


def test_string_and_object_arguments_render_alike() -> None:
    as_string = render(
        [
            USER,
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [call("read", '{"path": "a.py"}')],
            },
        ]
    )
    as_object = render(
        [
            USER,
            {"role": "assistant", "content": None, "tool_calls": [call("read", {"path": "a.py"})]},
        ]
    )
    assert as_string == as_object
    assert '```json\n{"name": "read", "arguments": {"path": "a.py"}}\n```<|im_end|>' in as_string


def test_each_parallel_call_gets_its_own_fence() -> None:
    text = render(
        [
            USER,
            {
                "role": "assistant",
                "content": "Reading both.",
                "tool_calls": [
                    call("read", {"path": "a.py"}, "c1"),
                    call("read", {"path": "b.py"}, "c2"),
                ],
            },
        ]
    )
    assert (
        'Reading both.\n\n```json\n{"name": "read", "arguments": {"path": "a.py"}}'
        '\n```\n```json\n{"name": "read", "arguments": {"path": "b.py"}}\n```'
    ) in text


def test_system_prompt_lists_tools_and_asks_for_the_fence() -> None:
    text = render([{"role": "system", "content": "You are lathe."}, USER], prompt=True)
    assert text.startswith("<|im_start|>system\nYou are lathe.\n\n# Tools\n")
    # One line a tool, as a signature: a third of the tokens of its JSON schema.
    assert "\n- read(path: string): Read a file\n" in text
    assert (
        '```json\n{"name": "<function name>", "arguments": {"<parameter>": <value>}}\n```' in text
    )
    assert text.endswith(
        "<|im_start|>user\nFix the failing test.<|im_end|>\n<|im_start|>assistant\n"
    )


def test_reasoning_before_each_call_only_when_asked() -> None:
    messages = [{"role": "system", "content": "You are lathe."}, USER]
    template = jinja2.Environment().from_string(TEMPLATE.read_text())

    plain = template.render(messages=messages, tools=TOOLS, add_generation_prompt=True)
    asked = template.render(
        messages=messages, tools=TOOLS, add_generation_prompt=True, reason_first=True
    )

    assert "Write one block per reply and stop after it;" in plain
    assert "reasoning" not in plain
    assert "Begin each reply with one or two sentences of reasoning" in asked
    assert "Then write one block and stop after it;" in asked


def test_without_tools_there_is_no_tool_section() -> None:
    text = render([USER], tools=None, prompt=True)
    assert "# Tools" not in text
    assert text.startswith("<|im_start|>system\nYou are a helpful coding assistant.<|im_end|>\n")


def test_consecutive_tool_results_share_one_user_turn() -> None:
    text = render(
        [
            USER,
            {
                "role": "assistant",
                "content": "",
                "tool_calls": [
                    call("read", {"path": "a"}, "c1"),
                    call("read", {"path": "b"}, "c2"),
                ],
            },
            {"role": "tool", "tool_call_id": "c1", "content": "A"},
            {"role": "tool", "tool_call_id": "c2", "content": "B"},
        ],
        prompt=True,
    )
    assert text.endswith(
        "<|im_start|>user\n<tool_response>\nA\n</tool_response>\n<tool_response>\nB\n"
        "</tool_response><|im_end|>\n<|im_start|>assistant\n"
    )


def test_optional_parameters_are_marked_and_a_tool_without_any_renders() -> None:
    tools = [
        {
            "type": "function",
            "function": {
                "name": "read",
                "description": "Read a file.",
                "parameters": {
                    "type": "object",
                    "properties": {"path": {"type": "string"}, "offset": {"type": "integer"}},
                    "required": ["path"],
                },
            },
        },
        {"name": "ls", "description": "List.", "parameters": {"type": "object", "properties": {}}},
    ]
    text = render([USER], tools=tools, prompt=True)
    assert "\n- read(path: string, offset?: integer): Read a file.\n- ls(): List.\n" in text
