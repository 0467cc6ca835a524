"""Prompt tokens sent over a fixed 40-turn scripted run with large tool outputs, with the
context budget on and off (the full-history baseline), side by side.

Tokens are lathe's own estimate of each request (system + tools + messages), the same
figure the budget works with. Usage: python bench/context_budget.py [--turns 40]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import tempfile
from pathlib import Path
from typing import ClassVar

from lathe.agent.compaction import ContextManager, fixed_prompt_tokens
from lathe.agent.context import Budget, conversation_tokens
from lathe.agent.loop import Agent, AgentDeps, AgentSettings
from lathe.exec.local import LocalExecutor
from lathe.llm.base import Completed, ModelRequest
from lathe.tools.base import Params, Tool, ToolContext, ToolOutput, ToolRegistry
from lathe.types import AssistantMessage, ToolCall

OUTPUT_BYTES = 12_000  # each tool result: about 3,000 tokens


class _Args(Params):
    n: int


class Dump(Tool):
    name: ClassVar[str] = "dump"
    description: ClassVar[str] = "prints a large log"
    parameters: ClassVar[type[Params]] = _Args
    read_only: ClassVar[bool] = True

    async def execute(self, args: _Args, ctx: ToolContext) -> ToolOutput:
        line = f"log line for step {args.n}: " + "x" * 60 + "\n"
        return ToolOutput(content=(line * (OUTPUT_BYTES // len(line)))[:OUTPUT_BYTES])

    def summarize_call(self, args: _Args) -> str:
        return str(args.n)


class CountingModel:
    """Calls `dump` for `turns - 1` turns, then finishes; answers summary requests."""

    def __init__(self, turns: int, fixed: int) -> None:
        self.turns, self.fixed = turns, fixed
        self.prompt_tokens: list[int] = []
        self.summaries = 0

    @property
    def model(self) -> str:
        return "bench"

    async def stream(self, request: ModelRequest):
        if not request.tools:
            self.summaries += 1
            yield Completed(AssistantMessage(text="Goal: bench. Progress: dumped logs."))
            return
        self.prompt_tokens.append(self.fixed + conversation_tokens(request.messages))
        step = len(self.prompt_tokens)
        if step >= self.turns:
            yield Completed(AssistantMessage(text="done"))
            return
        call = ToolCall(id=f"c{step}", name="dump", arguments=json.dumps({"n": step}))
        yield Completed(AssistantMessage(text=f"step {step}", tool_calls=(call,)))

    async def aclose(self) -> None:
        return None


async def _run(turns: int, budget: Budget | None) -> CountingModel:
    tools = ToolRegistry([Dump()])
    fixed = fixed_prompt_tokens("bench", json.dumps([s.parameters for s in tools.specs()]))
    model = CountingModel(turns, fixed)
    with tempfile.TemporaryDirectory() as tmp:
        context = ToolContext(Path(tmp), LocalExecutor(), Path(tmp), None)
        events: list = []
        manager = (
            ContextManager(budget, model, events.append, fixed_tokens=fixed) if budget else None
        )
        deps = AgentDeps(
            provider=model,
            tools=tools,
            tool_context=context,
            system_prompt="bench",
            settings=AgentSettings(max_turns=turns + 1, stall_repeat_limit=10**9),
            context=manager,
        )
        await Agent(deps, events.append).run("go")
    return model


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--turns", type=int, default=40)
    turns = parser.parse_args().turns
    budget = Budget(
        context_window=32_000,
        output_reserve=4_000,
        tool_output_keep_tokens=10_000,
        recent_keep_tokens=6_000,
    )
    off = asyncio.run(_run(turns, None))
    on = asyncio.run(_run(turns, budget))
    print(f"{turns} turns, {OUTPUT_BYTES:,} bytes of tool output per turn, window 32k")
    print(f"{'':28}{'budget off':>14}{'budget on':>14}")
    print(f"{'prompt tokens, total':28}{sum(off.prompt_tokens):>14,}{sum(on.prompt_tokens):>14,}")
    print(f"{'largest single request':28}{max(off.prompt_tokens):>14,}{max(on.prompt_tokens):>14,}")
    print(f"{'compactions':28}{off.summaries:>14}{on.summaries:>14}")


if __name__ == "__main__":
    main()
