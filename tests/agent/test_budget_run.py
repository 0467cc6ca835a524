"""A long run with large outputs stays inside a small window and still completes."""

from __future__ import annotations

import json
from pathlib import Path
from typing import ClassVar

from lathe.agent.compaction import ContextManager
from lathe.agent.context import Budget, conversation_tokens, request_problems
from lathe.agent.loop import Agent, AgentDeps, AgentSettings
from lathe.errors import ContextTooLong
from lathe.events import Compacted, RunStatus
from lathe.exec.local import LocalExecutor
from lathe.llm.base import Completed, ModelRequest
from lathe.tools.base import Params, Tool, ToolContext, ToolOutput, ToolRegistry
from lathe.types import AssistantMessage, ToolCall, UserMessage

TASK = "Collect all 60 logs, then say done."


class _Args(Params):
    n: int


class Dump(Tool):
    name: ClassVar[str] = "dump"
    description: ClassVar[str] = "prints a large log"
    parameters: ClassVar[type[Params]] = _Args
    read_only: ClassVar[bool] = True

    async def execute(self, args: _Args, ctx: ToolContext) -> ToolOutput:
        return ToolOutput(content=f"log {args.n}: " + "x" * 6000)

    def summarize_call(self, args: _Args) -> str:
        return str(args.n)


class WindowedModel:
    """A model with a hard window: it refuses any prompt over `window` tokens, the way a
    real endpoint answers "context too long"."""

    def __init__(self, turns: int, window: int) -> None:
        self.turns, self.window = turns, window
        self.sizes: list[int] = []
        self.requests: list[ModelRequest] = []

    @property
    def model(self) -> str:
        return "windowed"

    async def stream(self, request: ModelRequest):
        size = conversation_tokens(request.messages)
        if size > self.window:
            raise ContextTooLong(f"{size} tokens is more than {self.window}")
        if not request.tools:
            yield Completed(AssistantMessage(text="Goal: collect logs. Progress: some collected."))
            return
        self.sizes.append(size)
        self.requests.append(request)
        step = len(self.sizes)
        if step >= self.turns:
            yield Completed(AssistantMessage(text="done"))
            return
        call = ToolCall(id=f"c{step}", name="dump", arguments=json.dumps({"n": step}))
        yield Completed(AssistantMessage(tool_calls=(call,)))

    async def aclose(self) -> None:
        return None


async def test_sixty_turns_of_large_outputs_fit_a_small_window(tmp_path: Path):
    budget = Budget(
        context_window=5_000,
        output_reserve=1_000,
        tool_output_keep_tokens=1_600,
        recent_keep_tokens=1_500,
    )
    model = WindowedModel(turns=60, window=budget.prompt_limit)
    events: list = []
    deps = AgentDeps(
        provider=model,
        tools=ToolRegistry([Dump()]),
        tool_context=ToolContext(tmp_path, LocalExecutor(), tmp_path, None),
        system_prompt="test",
        settings=AgentSettings(max_turns=70, stall_repeat_limit=100),
        context=ContextManager(budget, model, events.append, fixed_tokens=200),
    )
    agent = Agent(deps, events.append)

    finished = await agent.run(TASK)

    assert finished.status is RunStatus.UNVERIFIED
    assert finished.answer == "done"
    assert len(model.sizes) == 60
    assert max(model.sizes) <= budget.prompt_limit
    assert any(isinstance(e, Compacted) for e in events)
    for request in model.requests:
        assert request_problems(request.messages) == []
        assert isinstance(request.messages[0], UserMessage)
        assert request.messages[0].content.startswith(TASK)
