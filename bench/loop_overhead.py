"""Harness time per turn: N turns on the scripted provider with a trivial tool.

The model and the tool cost nothing here, so what is measured is lathe's own work per
turn (building the request, parsing and validating calls, events, bookkeeping).

Usage: python bench/loop_overhead.py [--turns N]
"""

from __future__ import annotations

import argparse
import asyncio
import tempfile
import time
from pathlib import Path
from typing import ClassVar

from lathe.agent.loop import Agent, AgentDeps, AgentSettings
from lathe.exec.local import LocalExecutor
from lathe.llm.scripted import ScriptedProvider, reply
from lathe.tools.base import Params, Tool, ToolContext, ToolOutput, ToolRegistry


class _Args(Params):
    n: int


class Noop(Tool):
    name: ClassVar[str] = "noop"
    description: ClassVar[str] = "does nothing"
    parameters: ClassVar[type[Params]] = _Args
    read_only: ClassVar[bool] = True

    async def execute(self, args: _Args, ctx: ToolContext) -> ToolOutput:
        return ToolOutput(content=f"ok {args.n}")

    def summarize_call(self, args: _Args) -> str:
        return str(args.n)


async def _measure(turns: int) -> tuple[float, int]:
    script = [reply(f"step {i}", ("noop", {"n": i})) for i in range(turns - 1)]
    provider = ScriptedProvider([*script, reply("done")])
    events: list = []
    with tempfile.TemporaryDirectory() as tmp:
        context = ToolContext(
            workspace=Path(tmp), executor=LocalExecutor(), spill_dir=Path(tmp), file_state=None
        )
        deps = AgentDeps(
            provider=provider,
            tools=ToolRegistry([Noop()]),
            tool_context=context,
            system_prompt="bench",
            settings=AgentSettings(max_turns=turns + 1, stall_repeat_limit=10**9),
        )
        agent = Agent(deps, events.append)
        started = time.perf_counter()
        await agent.run("go")
        elapsed = time.perf_counter() - started
    return elapsed, len(events)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--turns", type=int, default=500)
    turns = parser.parse_args().turns
    elapsed, events = asyncio.run(_measure(turns))
    print(f"turns: {turns}  events: {events}  total: {elapsed * 1000:.0f} ms")
    print(f"harness time per turn: {elapsed * 1000 / turns:.2f} ms")


if __name__ == "__main__":
    main()
