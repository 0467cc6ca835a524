"""One conversation, two vendors: the real Agent loop runs its first turns on the fake
OpenAI server, then switches `agent.deps.provider` to AnthropicProvider on the fake
Anthropic server (as `--model` on `--resume` does), and the Anthropic request carries
the whole earlier conversation: calls paired with their results, reasoning as text."""

from __future__ import annotations

from pathlib import Path
from typing import ClassVar

from tests.fakes.anthropic_server import Reply as ClaudeReply
from tests.fakes.anthropic_server import ThinkingBlock, ToolUse
from tests.fakes.openai_server import Call
from tests.fakes.openai_server import Reply as GptReply
from tests.llm.provider_support import QUICK, SECRET

from lathe.agent.loop import Agent, AgentDeps, AgentSettings
from lathe.events import RunStatus
from lathe.exec.local import LocalExecutor
from lathe.llm.anthropic import AnthropicProvider
from lathe.llm.openai_chat import OpenAIChatProvider
from lathe.llm.retry import RetryPolicy
from lathe.tools.base import Params, Tool, ToolContext, ToolOutput, ToolRegistry
from lathe.types import AssistantMessage, Thinking

CACHE = {"type": "ephemeral"}


class NoteParams(Params):
    name: str


class Note(Tool):
    """Writes a note file; a small real tool so results come from the loop itself."""

    name: ClassVar[str] = "note"
    description: ClassVar[str] = "write a note"
    parameters: ClassVar[type[Params]] = NoteParams
    read_only: ClassVar[bool] = False

    async def execute(self, args: NoteParams, ctx: ToolContext) -> ToolOutput:
        (ctx.workspace / args.name).write_text("noted")
        return ToolOutput(content=f"wrote {args.name}")

    def summarize_call(self, args: NoteParams) -> str:
        return args.name


def make_agent(tmp_path: Path, provider) -> Agent:
    context = ToolContext(
        workspace=tmp_path, executor=LocalExecutor(), spill_dir=tmp_path / ".spill", file_state=None
    )
    deps = AgentDeps(
        provider=provider,
        tools=ToolRegistry([Note()]),
        tool_context=context,
        system_prompt="You are lathe.",
        settings=AgentSettings(retry=RetryPolicy(max_attempts=2, base_delay_s=0.001)),
    )
    return Agent(deps, lambda event: None)


async def test_a_conversation_moves_from_openai_to_anthropic_without_loss(
    tmp_path, fake_openai, fake_anthropic
):
    gpt = OpenAIChatProvider("fake-gpt", fake_openai.base_url, SECRET, timeouts=QUICK)
    claude = AnthropicProvider("fake-claude", fake_anthropic.base_url, SECRET, timeouts=QUICK)
    fake_openai.enqueue(
        GptReply(
            "Writing the notes.",
            reasoning="two notes are needed",
            calls=[Call("note", {"name": "a.txt"}), Call("note", '{"name": ')],
        ),
        GptReply("Both attempted."),
    )
    fake_anthropic.enqueue(
        ClaudeReply(
            thinking=[ThinkingBlock("retry the broken one", "sig-1")],
            calls=[ToolUse("note", {"name": "b.txt"}, id="toolu_1")],
        ),
        ClaudeReply("All notes written."),
    )
    agent = make_agent(tmp_path, gpt)
    try:
        first = await agent.run("write notes a and b")
        agent.deps.provider = claude
        second = await agent.run("did b get written?")
    finally:
        await gpt.aclose()
        await claude.aclose()

    assert (first.status, second.status) == (RunStatus.UNVERIFIED, RunStatus.UNVERIFIED)
    assert second.answer == "All notes written."
    assert (tmp_path / "a.txt").exists() and (tmp_path / "b.txt").exists()
    first_claude, second_claude = fake_anthropic.message_bodies()
    bad_call_error = first_claude["messages"][2]["content"][1]
    assert bad_call_error["tool_use_id"] == "call_1" and bad_call_error["is_error"] is True
    assert first_claude["messages"] == [
        {"role": "user", "content": [{"type": "text", "text": "write notes a and b"}]},
        {
            "role": "assistant",
            "content": [
                {
                    "type": "text",
                    "text": "<earlier_reasoning>\ntwo notes are needed\n</earlier_reasoning>",
                },
                {"type": "text", "text": "Writing the notes."},
                {"type": "tool_use", "id": "call_0", "name": "note", "input": {"name": "a.txt"}},
                {
                    "type": "tool_use",
                    "id": "call_1",
                    "name": "note",
                    "input": {"_raw_arguments": '{"name": '},
                },
            ],
        },
        {
            "role": "user",
            "content": [
                {"type": "tool_result", "tool_use_id": "call_0", "content": "wrote a.txt"},
                bad_call_error,
            ],
        },
        {"role": "assistant", "content": [{"type": "text", "text": "Both attempted."}]},
        {
            "role": "user",
            "content": [{"type": "text", "text": "did b get written?", "cache_control": CACHE}],
        },
    ]
    assert first_claude["system"] == [
        {"type": "text", "text": "You are lathe.", "cache_control": CACHE}
    ]
    assert first_claude["tools"][-1]["name"] == "note"
    assert first_claude["tools"][-1]["cache_control"] == CACHE
    # Claude's own thinking goes back to Claude signed, in its own turn.
    assert second_claude["messages"][5]["content"][0] == {
        "type": "thinking",
        "thinking": "retry the broken one",
        "signature": "sig-1",
    }
    assert second_claude["messages"][6]["content"] == [
        {
            "type": "tool_result",
            "tool_use_id": "toolu_1",
            "content": "wrote b.txt",
            "cache_control": CACHE,
        }
    ]
    claude_turn = agent.messages[-3]
    assert isinstance(claude_turn, AssistantMessage)
    assert claude_turn.thinking == (
        Thinking(text="retry the broken one", signature="sig-1", provider="anthropic"),
    )
