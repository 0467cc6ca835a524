"""A long run with large outputs stays inside a small window and still completes."""

from __future__ import annotations

import json
from pathlib import Path

from tests.fakes.tools import Dump

from lathe.agent.compaction import ContextManager
from lathe.agent.context import Budget, conversation_tokens, request_problems
from lathe.agent.loop import Agent, AgentDeps, AgentSettings
from lathe.errors import ContextTooLong
from lathe.events import Compacted, Notice, RunStatus
from lathe.exec.local import LocalExecutor
from lathe.llm.base import Completed, ModelRequest
from lathe.tools.base import ToolContext, ToolRegistry
from lathe.types import AssistantMessage, ToolCall, UserMessage

TASK = "Collect all 60 logs, then say done."


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


class BloatingSummaries(WindowedModel):
    """Writes a summary longer than anything it summarises, the way the 1.5B turned
    8,304 tokens into 8,329."""

    def __init__(self, turns: int, window: int) -> None:
        super().__init__(turns, window)
        self.summaries = 0

    async def stream(self, request: ModelRequest):
        if not request.tools:
            self.summaries += 1
            yield Completed(AssistantMessage(text="Goal: collect logs. " + "detail " * 4000))
            return
        async for event in super().stream(request):
            yield event


def _bloating_run(tmp_path: Path, task: str, turns: int = 30):
    budget = Budget(
        context_window=5_000,
        output_reserve=1_000,
        tool_output_keep_tokens=1_600,
        recent_keep_tokens=1_500,
    )
    model = BloatingSummaries(turns=turns, window=budget.prompt_limit)
    events: list = []
    deps = AgentDeps(
        provider=model,
        tools=ToolRegistry([Dump()]),
        tool_context=ToolContext(tmp_path, LocalExecutor(), tmp_path, None),
        system_prompt="test",
        settings=AgentSettings(max_turns=turns + 5, stall_repeat_limit=100),
        context=ContextManager(budget, model, events.append, fixed_tokens=200),
    )
    return Agent(deps, events.append), model, events, budget


async def test_a_history_that_cannot_fit_ends_the_run_saying_so(tmp_path: Path):
    huge_task = TASK + " " + "context " * 3000  # alone larger than the window
    agent, model, _, _ = _bloating_run(tmp_path, huge_task)

    finished = await agent.run(huge_task)

    assert finished.status is RunStatus.PROVIDER_ERROR
    assert "the first request does not fit the model's window" in finished.reason
    assert "a smaller task message" in finished.reason
    assert model.summaries <= 2


async def test_a_compaction_that_does_not_shrink_is_dropped_and_the_run_stops_honestly(
    tmp_path: Path,
):
    agent, model, events, budget = _bloating_run(tmp_path, TASK, turns=60)

    finished = await agent.run(TASK)

    assert not [e for e in events if isinstance(e, Compacted)]  # never kept a larger history
    assert any(isinstance(e, Notice) and "did not shrink" in e.message for e in events)
    assert model.summaries <= 3  # not one a turn: again only once the older part doubled
    assert max(model.sizes) <= budget.prompt_limit
    assert finished.status is RunStatus.PROVIDER_ERROR
    assert "no longer fits the model's window" in finished.reason
