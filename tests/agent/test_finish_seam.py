"""Edges of the finish seam found in review: a run cut by its time limit answers each
call truthfully, an empty reply after a cut-off one is asked again, a finish outside a
settled decision keeps its messages, and lathe's estimate never refuses a request."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import ClassVar

from tests.agent.test_loop import Touch

from lathe.agent.budget import RunBudget
from lathe.agent.compaction import ContextManager
from lathe.agent.context import Budget
from lathe.agent.ending import standard_handlers
from lathe.agent.finish import Finish, FinishHandler
from lathe.agent.loop import Agent, AgentDeps, AgentSettings
from lathe.events import RunStatus, ToolFinished, ToolStarted
from lathe.exec.local import LocalExecutor
from lathe.llm.retry import RetryPolicy
from lathe.llm.scripted import ScriptedProvider, reply
from lathe.tools.base import Params, Tool, ToolContext, ToolOutput, ToolRegistry
from lathe.types import AssistantMessage, StopReason, ToolResultMessage, UserMessage


class SlowParams(Params):
    seconds: float


class Slow(Tool):
    name: ClassVar[str] = "slow"
    description: ClassVar[str] = "wait"
    parameters: ClassVar[type[Params]] = SlowParams

    async def execute(self, args: SlowParams, ctx: ToolContext) -> ToolOutput:
        await asyncio.sleep(args.seconds)
        return ToolOutput(content="waited")


def make_agent(tmp_path: Path, provider, tools, **settings) -> tuple[Agent, list]:
    events: list = []
    context = ToolContext(
        workspace=tmp_path, executor=LocalExecutor(), spill_dir=tmp_path / ".s", file_state=None
    )
    deps = AgentDeps(
        provider=provider,
        tools=ToolRegistry(tools),
        tool_context=context,
        system_prompt="test",
        settings=AgentSettings(retry=RetryPolicy(max_attempts=1), **settings),
    )
    return Agent(deps, events.append), events


async def test_a_time_limit_mid_batch_keeps_finished_results_and_marks_only_the_cut_call(
    tmp_path: Path,
):
    calls = reply("", ("touch", {"path": "a.txt"}), ("slow", {"seconds": 30}))
    agent, events = make_agent(
        tmp_path, ScriptedProvider([calls]), [Touch(), Slow()], budget=RunBudget(timeout_s=0.5)
    )

    finished = await agent.run("go")

    assert finished.status is RunStatus.OUT_OF_BUDGET
    results = [m for m in agent.messages if isinstance(m, ToolResultMessage)]
    assert [r.tool_call_id for r in results] == [c.id for c in calls.tool_calls]
    assert results[0].content == "created a.txt" and not results[0].is_error
    assert results[1].is_error and "may have run in part" in results[1].content
    for event_type in (ToolStarted, ToolFinished):
        ids = [e.call_id for e in events if isinstance(e, event_type)]
        assert sorted(ids) == sorted(c.id for c in calls.tool_calls)  # once each


async def test_an_empty_reply_after_a_cut_off_one_is_asked_again(tmp_path: Path):
    cut = AssistantMessage(text="partial", stop_reason=StopReason.MAX_TOKENS)
    provider = ScriptedProvider([reply(""), cut, reply(""), reply("done")])
    agent, _ = make_agent(tmp_path, provider, [Touch()])

    finished = await agent.run("go")

    assert finished.status is RunStatus.UNVERIFIED, finished.reason
    assert finished.answer == "done"


async def test_a_finish_at_the_turn_limit_keeps_its_messages(tmp_path: Path):
    class Remember(FinishHandler):
        async def out_of_turns(self, run):
            note = UserMessage(content="remember this", origin="lathe")
            return Finish(RunStatus.FAILED, reason="x", messages=(note,))

    provider = ScriptedProvider([reply("", ("touch", {"path": "a"}))])
    agent, _ = make_agent(tmp_path, provider, [Touch()], max_turns=1)
    agent.deps.finish = [Remember(), *standard_handlers(agent.deps)]

    finished = await agent.run("go")

    assert finished.status is RunStatus.FAILED
    assert agent.messages[-1] == UserMessage(content="remember this", origin="lathe")


async def test_lathes_high_estimate_alone_never_refuses_a_request(tmp_path: Path):
    provider = ScriptedProvider([reply("ok")])
    budget = Budget(
        context_window=32_000, output_reserve=4_000, tool_output_keep_tokens=8_000,
        recent_keep_tokens=6_000,
    )  # fmt: skip
    manager = ContextManager(budget, provider, lambda event: None, fixed_tokens=500)
    # About 22k real tokens of prose, about 30k by the 3-bytes-a-token estimate.
    history: list = [UserMessage(content="the quick brown fox jumps over the lazy dog " * 2100)]

    sent = await manager.prepare(history)

    assert sent == history


async def test_a_person_who_keeps_saying_no_is_steering_not_a_stall(tmp_path: Path):
    from lathe.policy.gate import ApprovalAnswer, Mode, Policy, PolicyGate
    from lathe.policy.rules import RuleSet

    class SaysNo:
        async def ask(self, request):
            return ApprovalAnswer("deny", "not now")

    replies = [reply("", ("touch", {"path": f"f{n}"})) for n in range(8)] + [reply("ok")]
    agent, _ = make_agent(tmp_path, ScriptedProvider(replies), [Touch()])
    policy = Policy(
        mode=Mode.ASK, rules=RuleSet.from_strings(allow=[], deny=[]), workspace=tmp_path,
        home=Path.home(), sandboxed=True, tools=agent.deps.tools,
    )  # fmt: skip
    agent.deps.hooks = PolicyGate(policy, SaysNo())

    finished = await agent.run("make files")

    assert finished.status is RunStatus.UNVERIFIED, finished.reason
    assert not list(tmp_path.glob("f*"))
