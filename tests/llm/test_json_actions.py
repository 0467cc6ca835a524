"""JSON-schema action mode over real HTTP: constrained replies become tool calls."""

from __future__ import annotations

import json
from pathlib import Path

from tests.fakes.openai_server import Reply

from lathe.agent.loop import Agent, AgentDeps
from lathe.events import RunStatus
from lathe.exec.local import LocalExecutor
from lathe.llm.json_actions import JsonActionProvider, parse_action, render_history
from lathe.llm.openai_chat import OpenAIChatProvider
from lathe.tools.base import ToolContext, ToolRegistry
from lathe.tools.builtin import builtin_tools
from lathe.types import AssistantMessage, ToolCall, ToolResultMessage, UserMessage


async def test_a_run_in_action_mode_reads_edits_and_finishes(tmp_path: Path, fake_openai):
    (tmp_path / "app.py").write_text("def add(a, b):\n    return a - b\n")
    edit = {"path": "app.py", "old_string": "a - b", "new_string": "a + b"}
    fake_openai.enqueue(
        Reply(json.dumps({"tool": "read", "arguments": {"path": "app.py"}})),
        Reply(json.dumps({"tool": "edit", "arguments": edit})),
        Reply(json.dumps({"tool": "finish", "message": "add now adds"})),
    )
    provider = JsonActionProvider(OpenAIChatProvider("small", fake_openai.base_url, "k"))
    deps = AgentDeps(
        provider=provider,
        tools=ToolRegistry(builtin_tools()),
        tool_context=ToolContext(tmp_path, LocalExecutor(), tmp_path / ".spill", None),
        system_prompt="You fix code.",
    )

    finished = await Agent(deps, lambda event: None).run("fix add")
    await provider.aclose()

    assert finished.status is RunStatus.UNVERIFIED
    assert finished.answer == "add now adds"
    assert (tmp_path / "app.py").read_text() == "def add(a, b):\n    return a + b\n"
    bodies = fake_openai.chat_bodies()
    assert all("tools" not in body for body in bodies)
    schema = bodies[0]["response_format"]["json_schema"]["schema"]
    assert {c["properties"]["tool"]["const"] for c in schema["anyOf"]} >= {"read", "edit", "finish"}
    assert "edit(path, old_string, new_string, replace_all?)" in bodies[0]["messages"][0]["content"]
    last = bodies[2]["messages"]
    assert last[-2] == {
        "role": "assistant",
        "content": json.dumps({"tool": "edit", "arguments": edit}),
    }
    assert last[-1]["role"] == "user" and last[-1]["content"].startswith("[edit result]")


def test_history_is_rendered_as_plain_turns():
    call = ToolCall(id="c1", name="read", arguments='{"path": "a.py"}')
    history = [
        UserMessage(content="task"),
        AssistantMessage(tool_calls=(call,)),
        ToolResultMessage(tool_call_id="c1", name="read", content="1\tx", is_error=False),
        UserMessage(content="verify failed"),
    ]
    rendered = render_history(history)
    assert [m.role for m in rendered] == ["user", "assistant", "user"]
    assert rendered[2].content == "[read result]\n1\tx\n\nverify failed"


def test_non_json_text_is_a_final_answer_and_arguments_survive():
    assert parse_action("plain words", "m").text == "plain words"
    message = parse_action('{"tool": "bash", "arguments": {"command": "ls"}}', "m")
    assert message.tool_calls[0].name == "bash"
    assert json.loads(message.tool_calls[0].arguments) == {"command": "ls"}
