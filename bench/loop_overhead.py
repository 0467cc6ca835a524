"""Harness time per turn: N turns on the scripted provider with a trivial tool.

The model and the tool cost nothing here, so what is measured is lathe's own work per
turn (building the request with pruning and the context budget as a real run does,
parsing and validating calls, events, bookkeeping). `--output-chars` makes each tool
output that long, so that older outputs get pruned as the run grows.

Built as `lathe run` builds it: the provider behind the secret masking an API key brings
(`Redactor.provider`), and what start-up made frozen out of the collector's walks
(`gc.freeze()` right before `agent.run`, as `ui/headless.py` does). The per-turn figures
are wall time and CPU time of this process; the CPU figure is the steadier one on a
busy machine.

Usage: python bench/loop_overhead.py [--turns N ...] [--output-chars N]
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import tempfile
import time
from pathlib import Path
from typing import ClassVar

from lathe.agent.compaction import ContextManager, fixed_prompt_tokens
from lathe.agent.context import Budget
from lathe.agent.loop import Agent, AgentDeps, AgentSettings
from lathe.events import TurnStarted
from lathe.exec.local import LocalExecutor
from lathe.llm.scripted import ScriptedProvider, reply
from lathe.obs.redact import Redactor
from lathe.tools.base import Params, Tool, ToolContext, ToolOutput, ToolRegistry


class _Args(Params):
    n: int


class Noop(Tool):
    name: ClassVar[str] = "noop"
    description: ClassVar[str] = "does nothing"
    parameters: ClassVar[type[Params]] = _Args
    read_only: ClassVar[bool] = True

    output_chars: ClassVar[int] = 0

    async def execute(self, args: _Args, ctx: ToolContext) -> ToolOutput:
        return ToolOutput(content=f"ok {args.n} " + "x" * self.output_chars)

    def summarize_call(self, args: _Args) -> str:
        return str(args.n)


class _Unrecorded(ScriptedProvider):
    """Keeps no requests, as a real provider keeps none: the scripted provider's record of
    3,000 requests of up to 6,000 messages each made the collector's walks over it most
    of the figure at 3,000 turns."""

    def stream(self, request):
        self.requests.clear()
        return super().stream(request)


async def _measure(turns: int, output_chars: int) -> tuple[float, float, float, int]:
    """Total seconds; wall and CPU seconds per turn over the last tenth of the turns;
    events."""
    script = [reply(f"step {i}", ("noop", {"n": i})) for i in range(turns - 1)]
    scripted = _Unrecorded([*script, reply("done")])
    provider = Redactor(["bench-api-key-0123456789abcdef"]).provider(scripted)
    events = 0
    turn_starts: list[tuple[float, float]] = []

    def emit(event) -> None:
        nonlocal events
        events += 1
        if isinstance(event, TurnStarted):
            turn_starts.append((time.perf_counter(), time.process_time()))

    tool = Noop()
    tool.output_chars = output_chars
    tools = ToolRegistry([tool])
    with tempfile.TemporaryDirectory() as tmp:
        context = ToolContext(
            workspace=Path(tmp), executor=LocalExecutor(), spill_dir=Path(tmp), file_state=None
        )
        deps = AgentDeps(
            provider=provider,
            tools=tools,
            tool_context=context,
            system_prompt="bench",
            settings=AgentSettings(max_turns=turns + 1, stall_repeat_limit=10**9),
            # As `lathe run` builds it: a window no run of this bench outgrows, the
            # default budget for whole tool outputs.
            context=ContextManager(
                Budget(context_window=10**9, output_reserve=16_000),
                provider,
                emit,
                fixed_tokens=fixed_prompt_tokens("bench", str(tools.specs())),
            ),
        )
        agent = Agent(deps, emit)
        gc.freeze()
        started = time.perf_counter()
        await agent.run("go")
        elapsed = time.perf_counter() - started
    gc.unfreeze()  # the next size starts from the same heap
    tail = max(len(turn_starts) // 10, 1)
    if tail >= len(turn_starts):
        return elapsed, elapsed / turns, elapsed / turns, events
    (wall_end, cpu_end), (wall_start, cpu_start) = turn_starts[-1], turn_starts[-1 - tail]
    return elapsed, (wall_end - wall_start) / tail, (cpu_end - cpu_start) / tail, events


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--turns", type=int, nargs="+", default=[10, 100, 1000, 3000])
    parser.add_argument("--output-chars", type=int, default=0)
    options = parser.parse_args()
    for turns in options.turns:
        elapsed, at_end, cpu_at_end, events = asyncio.run(_measure(turns, options.output_chars))
        print(
            f"turns: {turns:>5}  events: {events:>6}  total: {elapsed * 1000:>7.0f} ms  "
            f"per turn: {elapsed * 1000 / turns:.2f} ms on average, "
            f"{at_end * 1000:.2f} ms over the last tenth ({cpu_at_end * 1000:.2f} ms CPU)"
        )


if __name__ == "__main__":
    main()
