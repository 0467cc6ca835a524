"""The loop against the scripted provider, with small tools defined here."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import ClassVar

import pytest

from lathe.agent.loop import Agent, AgentDeps, AgentSettings
from lathe.errors import AuthError, Overloaded, RateLimited
from lathe.events import Retrying, RunStatus, StallNudge, ToolFinished, VerifyFinished
from lathe.exec.local import LocalExecutor
from lathe.hooks.base import AgentHooks
from lathe.llm.retry import RetryPolicy
from lathe.llm.scripted import ScriptedProvider, reply
from lathe.tools.base import Params, Tool, ToolContext, ToolOutput, ToolRegistry
from lathe.tools.edit import EditTool
from lathe.types import AssistantMessage, ToolResultMessage, UserMessage


class PathParams(Params):
    path: str


class Touch(Tool):
    """Creates a file: a mutating tool."""

    name: ClassVar[str] = "touch"
    description: ClassVar[str] = "create a file"
    parameters: ClassVar[type[Params]] = PathParams
    read_only: ClassVar[bool] = False

    async def execute(self, args: PathParams, ctx: ToolContext) -> ToolOutput:
        (ctx.workspace / args.path).write_text("x")
        return ToolOutput(content=f"created {args.path}", summary="created")

    def summarize_call(self, args: PathParams) -> str:
        return args.path


class Peek(Tool):
    """Read-only. "left" and "right" each wait (up to 2 s) until the other has started,
    to prove concurrency; any other path returns at once."""

    name: ClassVar[str] = "peek"
    description: ClassVar[str] = "look at a path"
    parameters: ClassVar[type[Params]] = PathParams
    read_only: ClassVar[bool] = True
    started: ClassVar[dict[str, asyncio.Event]] = {}

    async def execute(self, args: PathParams, ctx: ToolContext) -> ToolOutput:
        Peek.started.setdefault(args.path, asyncio.Event()).set()
        partner = {"left": "right", "right": "left"}.get(args.path)
        if partner is None:
            return ToolOutput(content=f"peeked {args.path}")
        try:
            await asyncio.wait_for(Peek.started.setdefault(partner, asyncio.Event()).wait(), 2)
            return ToolOutput(content=f"peeked {args.path} alongside {partner}")
        except TimeoutError:
            return ToolOutput(content=f"peeked {args.path} alone")

    def summarize_call(self, args: PathParams) -> str:
        return args.path


class FakeBash(Tool):
    name: ClassVar[str] = "bash"
    description: ClassVar[str] = "pretend to run a command"
    parameters: ClassVar[type[Params]] = type(
        "CommandParams", (Params,), {"__annotations__": {"command": str}}
    )
    read_only: ClassVar[bool] = False
    repeatable: ClassVar[bool] = True

    async def execute(self, args, ctx: ToolContext) -> ToolOutput:
        code = 1 if "fail" in args.command else 0
        return ToolOutput(content=f"ran\n[exit code: {code}]", details={"exit_code": code})

    def summarize_call(self, args) -> str:
        return args.command

    def shell_command(self, arguments: dict) -> str | None:
        return str(arguments.get("command", ""))


@pytest.fixture(autouse=True)
def _reset_peek():
    Peek.started = {}


def make_agent(tmp_path: Path, provider: ScriptedProvider, **settings) -> tuple[Agent, list]:
    events: list = []
    context = ToolContext(
        workspace=tmp_path, executor=LocalExecutor(), spill_dir=tmp_path / ".spill", file_state=None
    )
    deps = AgentDeps(
        provider=provider,
        tools=ToolRegistry([Touch(), Peek(), FakeBash()]),
        tool_context=context,
        system_prompt="test",
        settings=AgentSettings(
            retry=RetryPolicy(max_attempts=3, base_delay_s=0.001, max_delay_s=0.01), **settings
        ),
    )
    return Agent(deps, events.append), events


def sent_messages(provider: ScriptedProvider, request_index: int) -> list:
    return list(provider.requests[request_index].messages)


async def test_tool_results_are_fed_back_with_matching_ids(tmp_path):
    first = reply("looking", ("touch", {"path": "a.txt"}), ("peek", {"path": "a"}))
    provider = ScriptedProvider([first, reply("all done")])
    agent, _ = make_agent(tmp_path, provider)

    finished = await agent.run("make a.txt")

    assert finished.status is RunStatus.UNVERIFIED
    assert finished.answer == "all done"
    second = sent_messages(provider, 1)
    assert [type(m) for m in second] == [
        UserMessage,
        AssistantMessage,
        ToolResultMessage,
        ToolResultMessage,
    ]
    assert [m.tool_call_id for m in second[2:]] == [c.id for c in first.tool_calls]
    assert second[2].content == "created a.txt"
    assert (tmp_path / "a.txt").exists()


async def test_read_only_calls_run_concurrently_and_results_keep_call_order(tmp_path):
    calls = reply("", ("peek", {"path": "left"}), ("peek", {"path": "right"}))
    provider = ScriptedProvider([calls, reply("ok")])
    agent, _ = make_agent(tmp_path, provider)

    await agent.run("peek both")

    results = [m for m in sent_messages(provider, 1) if isinstance(m, ToolResultMessage)]
    assert [r.content for r in results] == [
        "peeked left alongside right",
        "peeked right alongside left",
    ]


async def test_verify_gate_passes(tmp_path):
    provider = ScriptedProvider([reply("done")])
    agent, events = make_agent(tmp_path, provider, verify_command="true")

    finished = await agent.run("task")

    assert finished.status is RunStatus.VERIFIED
    assert [e.passed for e in events if isinstance(e, VerifyFinished)] == [True]


async def test_verify_failure_goes_back_to_the_model_until_it_passes(tmp_path):
    provider = ScriptedProvider(
        [reply("done"), reply("", ("touch", {"path": "ok.flag"})), reply("done now")]
    )
    agent, events = make_agent(
        tmp_path, provider, verify_command="test -f ok.flag || { echo missing flag; exit 3; }"
    )

    finished = await agent.run("task")

    assert finished.status is RunStatus.VERIFIED
    assert finished.turns == 3
    feedback = sent_messages(provider, 1)[-1]
    assert isinstance(feedback, UserMessage)
    assert "exit code 3" in feedback.content and "missing flag" in feedback.content
    assert [e.passed for e in events if isinstance(e, VerifyFinished)] == [False, True]


async def test_verify_first_starts_the_conversation_from_the_real_failure(tmp_path):
    provider = ScriptedProvider([reply("", ("touch", {"path": "ok.flag"})), reply("done")])
    agent, events = make_agent(
        tmp_path,
        provider,
        verify_command="test -f ok.flag || { echo missing flag; exit 3; }",
        verify_first=True,
    )

    finished = await agent.run("make the check pass")

    assert finished.status is RunStatus.VERIFIED
    [first] = sent_messages(provider, 0)
    assert first.content.startswith("make the check pass\n\nBefore you started")
    assert "exit code 3" in first.content and "missing flag" in first.content
    assert [e.passed for e in events if isinstance(e, VerifyFinished)] == [False, True]


async def test_verify_first_says_when_the_check_already_passes(tmp_path):
    provider = ScriptedProvider([reply("nothing to do"), reply("still nothing")])
    agent, events = make_agent(tmp_path, provider, verify_command="true", verify_first=True)

    await agent.run("task")
    await agent.run("next task")

    [first] = sent_messages(provider, 0)
    assert first.content.endswith("lathe ran the verify command `true`: it passes.")
    # Only a new conversation starts with the check: the follow-up message is as typed.
    assert sent_messages(provider, 1)[-1].content == "next task"
    assert len([e for e in events if isinstance(e, VerifyFinished)]) == 3


async def test_a_fix_shown_as_code_instead_of_made_is_pointed_out(tmp_path):
    shown = "The fix:\n\n```python\ndef mean(values):\n    return 0.0\n```"
    provider = ScriptedProvider([reply(shown), reply("done"), reply("done")])
    agent, _ = make_agent(tmp_path, provider, verify_command="exit 1", max_turns=3)

    await agent.run("task")

    after_code, after_words = sent_messages(provider, 1)[-1], sent_messages(provider, 2)[-1]
    assert "code in a reply changes no file: make the change with the edit tool" in (
        after_code.content
    )
    assert "code in a reply" not in after_words.content


def make_editing_agent(tmp_path: Path, provider: ScriptedProvider, **settings):
    agent, events = make_agent(tmp_path, provider, **settings)
    agent.deps.tools = ToolRegistry([EditTool(), FakeBash()])
    return agent, events


async def test_a_fix_shown_as_code_is_applied_as_an_edit_and_checked(tmp_path):
    (tmp_path / "stats.py").write_text(
        "def mean(values):\n    return sum(values) / len(values)\n\n\n"
        "def total(v):\n    return sum(v)\n"
    )
    shown = (
        "The fix:\n\n```python\ndef mean(values):\n"
        "    return sum(values) / len(values) if values else 0.0\n```"
    )
    provider = ScriptedProvider([reply(shown)])
    agent, events = make_editing_agent(
        tmp_path,
        provider,
        verify_command="python -c 'import stats; assert stats.mean([]) == 0.0'",
        apply_reply_code=True,
    )

    finished = await agent.run("mean of nothing should be 0.0")

    assert finished.status is RunStatus.VERIFIED
    assert finished.turns == 1
    assert (tmp_path / "stats.py").read_text() == (
        "def mean(values):\n    return sum(values) / len(values) if values else 0.0\n\n\n"
        "def total(v):\n    return sum(v)\n"
    )
    assert [e.name for e in events if isinstance(e, ToolFinished)] == ["edit"]
    assert [e.passed for e in events if isinstance(e, VerifyFinished)] == [False, True]
    # Recorded, so the next message of an interactive conversation knows of the edit.
    record = agent.messages[-1]
    assert isinstance(record, UserMessage)
    assert record.content.startswith("lathe applied the code in your reply as an edit:")
    assert record.content.endswith("passed.")


class RefuseEdits(AgentHooks):
    async def before_tool(self, name, arguments):
        return ToolOutput(content="denied: edit is not allowed", is_error=True)


async def test_refused_fixes_shown_again_and_again_end_the_run_stuck(tmp_path):
    (tmp_path / "stats.py").write_text("def mean(values):\n    return 1\n")
    shown = "```python\ndef mean(values):\n    return 2\n```"
    provider = ScriptedProvider([reply(shown)] * 5)
    agent, _ = make_editing_agent(
        tmp_path, provider, verify_command="exit 1", apply_reply_code=True, max_turns=5
    )
    agent.deps.hooks = RefuseEdits()

    finished = await agent.run("task")

    assert finished.status is RunStatus.STUCK
    assert finished.turns == 3
    feedback = sent_messages(provider, 1)[-1].content
    assert feedback.startswith("lathe tried to apply the code in your reply as an edit: denied")
    assert (tmp_path / "stats.py").read_text() == "def mean(values):\n    return 1\n"


async def test_an_applied_fix_that_still_fails_is_reported_with_the_new_failure(tmp_path):
    (tmp_path / "stats.py").write_text("def mean(values):\n    return sum(values) / len(values)\n")
    wrong = "```python\ndef mean(values):\n    return sum(values) // len(values)\n```"
    provider = ScriptedProvider([reply(wrong), reply("giving up")])
    agent, _ = make_editing_agent(
        tmp_path,
        provider,
        # Naming no file: a file the check names is part of it, never changed from a reply.
        verify_command="grep -rq 'if values' .",
        apply_reply_code=True,
        max_turns=2,
    )

    await agent.run("task")

    feedback = sent_messages(provider, 1)[-1].content
    assert feedback.startswith("lathe applied the code in your reply as an edit:")
    assert "+    return sum(values) // len(values)" in feedback
    assert "After that, the verify command" in feedback
    assert "changes no file" not in feedback


async def test_shown_code_is_not_applied_unless_asked(tmp_path):
    (tmp_path / "stats.py").write_text("def mean(values):\n    return 1\n")
    shown = "```python\ndef mean(values):\n    return 2\n```"
    provider = ScriptedProvider([reply(shown), reply("done")])
    agent, _ = make_editing_agent(tmp_path, provider, verify_command="exit 1", max_turns=2)

    await agent.run("task")

    assert (tmp_path / "stats.py").read_text() == "def mean(values):\n    return 1\n"


async def test_verify_that_never_passes_ends_failed(tmp_path):
    provider = ScriptedProvider(
        [reply("done"), reply("", ("peek", {"path": "x"})), reply("done"), reply("done")]
    )
    agent, _ = make_agent(tmp_path, provider, verify_command="exit 1", max_turns=4)

    finished = await agent.run("task")

    assert finished.status is RunStatus.FAILED
    assert "verify" in finished.reason


async def test_claiming_done_again_and_again_without_acting_is_stuck(tmp_path):
    provider = ScriptedProvider([reply("done")] * 5)
    agent, events = make_agent(tmp_path, provider, verify_command="exit 1", max_turns=10)

    finished = await agent.run("task")

    assert finished.status is RunStatus.STUCK
    assert finished.turns == 3
    assert "said it was done 3 times in a row" in finished.reason
    assert len([e for e in events if isinstance(e, VerifyFinished)]) == 3


async def test_stall_nudges_once_then_stops_stuck(tmp_path):
    same = [reply("", ("peek", {"path": "x"})) for _ in range(5)]
    provider = ScriptedProvider(same)
    agent, events = make_agent(tmp_path, provider)

    finished = await agent.run("task")

    assert finished.status is RunStatus.STUCK
    assert finished.turns == 4
    assert len([e for e in events if isinstance(e, StallNudge)]) == 1
    nudge = sent_messages(provider, 3)[-1]
    assert isinstance(nudge, UserMessage) and "same arguments 3 times" in nudge.content


async def test_max_turns_stops_the_run(tmp_path):
    provider = ScriptedProvider([reply("", ("peek", {"path": str(i)})) for i in range(10)])
    agent, _ = make_agent(tmp_path, provider, max_turns=4)

    finished = await agent.run("task")

    assert finished.status is RunStatus.MAX_TURNS
    assert finished.turns == 4
    assert len(provider.requests) == 4


async def test_truncated_json_arguments_are_repaired(tmp_path):
    provider = ScriptedProvider([reply("", ("touch", '{"path": "fixed.txt"')), reply("ok")])
    agent, _ = make_agent(tmp_path, provider)

    await agent.run("task")

    assert (tmp_path / "fixed.txt").exists()


async def test_ambiguous_json_arguments_get_an_error_result(tmp_path):
    provider = ScriptedProvider([reply("", ("touch", "{path: fixed.txt}")), reply("ok")])
    agent, _ = make_agent(tmp_path, provider)

    await agent.run("task")

    result = sent_messages(provider, 1)[-1]
    assert result.is_error and "not valid JSON" in result.content
    assert not (tmp_path / "fixed.txt").exists()


async def test_arguments_are_validated_against_the_schema(tmp_path):
    provider = ScriptedProvider([reply("", ("touch", {"file": "a"})), reply("ok")])
    agent, _ = make_agent(tmp_path, provider)

    await agent.run("task")

    result = sent_messages(provider, 1)[-1]
    assert result.is_error
    assert "invalid arguments for touch" in result.content and "path" in result.content


async def test_unknown_tool_gets_a_result_listing_the_real_tools(tmp_path):
    provider = ScriptedProvider([reply("", ("delete_everything", {})), reply("ok")])
    agent, events = make_agent(tmp_path, provider)

    await agent.run("task")

    result = sent_messages(provider, 1)[-1]
    assert result.is_error
    assert "no tool named 'delete_everything'" in result.content
    assert "touch, peek, bash" in result.content
    assert any(isinstance(e, ToolFinished) and e.is_error for e in events)


async def test_transient_errors_are_retried_with_retry_events(tmp_path):
    provider = ScriptedProvider(
        [RateLimited("slow down", retry_after=0.001), Overloaded("busy"), reply("fine")]
    )
    agent, events = make_agent(tmp_path, provider)

    finished = await agent.run("task")

    assert finished.status is RunStatus.UNVERIFIED
    retries = [e for e in events if isinstance(e, Retrying)]
    assert [r.attempt for r in retries] == [1, 2]
    assert [type(m) for m in agent.messages] == [UserMessage, AssistantMessage]


async def test_fatal_provider_error_ends_the_run(tmp_path):
    provider = ScriptedProvider([AuthError("the key in OPENAI_API_KEY was rejected")])
    agent, events = make_agent(tmp_path, provider)

    finished = await agent.run("task")

    assert finished.status is RunStatus.PROVIDER_ERROR
    assert "OPENAI_API_KEY" in finished.reason
    assert not any(isinstance(e, Retrying) for e in events)


async def test_unverified_run_reports_the_last_test_after_the_last_edit(tmp_path):
    provider = ScriptedProvider(
        [
            reply("", ("bash", {"command": "pytest -q fail"})),
            reply("", ("touch", {"path": "a"})),
            reply("", ("bash", {"command": "python -m pytest -q"})),
            reply("done"),
        ]
    )
    agent, _ = make_agent(tmp_path, provider)

    finished = await agent.run("task")

    assert finished.status is RunStatus.UNVERIFIED
    assert finished.evidence is not None
    assert finished.evidence.command == "python -m pytest -q"
    assert finished.evidence.exit_code == 0


async def test_no_evidence_when_nothing_was_tested_after_the_last_edit(tmp_path):
    provider = ScriptedProvider(
        [
            reply("", ("bash", {"command": "pytest"})),
            reply("", ("touch", {"path": "a"})),
            reply("done"),
        ]
    )
    agent, _ = make_agent(tmp_path, provider)

    finished = await agent.run("task")

    assert finished.evidence is None


async def test_a_repeated_cycle_of_calls_is_a_stall_too(tmp_path):
    cycle = [reply("", ("peek", {"path": "a"})), reply("", ("touch", {"path": "b"}))]
    provider = ScriptedProvider(cycle * 5)
    agent, events = make_agent(tmp_path, provider)

    finished = await agent.run("task")
    nudges = [e for e in events if isinstance(e, StallNudge)]

    assert finished.status is RunStatus.STUCK
    assert finished.turns == 7
    assert len(nudges) == 1
    nudge = sent_messages(provider, 6)[-1]
    assert "repeated the same 2 calls (peek, touch) 3 times over" in nudge.content


async def test_the_same_file_change_again_and_again_is_a_stall_however_spaced(tmp_path):
    script = []
    for i in range(5):  # the same change, between reads of ever-different ranges
        script += [reply("", ("touch", {"path": "b"})), reply("", ("peek", {"path": f"a{i}"}))]
    provider = ScriptedProvider(script)
    agent, events = make_agent(tmp_path, provider, max_turns=20)

    finished = await agent.run("task")

    assert finished.status is RunStatus.STUCK
    assert finished.turns == 7  # third touch: nudge; fourth: stuck
    assert len([e for e in events if isinstance(e, StallNudge)]) == 1
    nudge = sent_messages(provider, 5)[-1]
    assert "made the same touch call 3 times in this run" in nudge.content


@pytest.mark.parametrize(
    ("between", "rounds"),
    [
        (("bash", {"command": "t"}), 4),  # the same command between changes
        (("peek", {"path": "a"}), 6),  # the same read between edits with new arguments
    ],
)
async def test_changes_with_different_arguments_are_progress(tmp_path, between, rounds):
    script = []
    for i in range(rounds):
        script += [reply("", ("touch", {"path": f"f{i}"})), reply("", between)]
    provider = ScriptedProvider([*script, reply("done")])
    agent, _ = make_agent(tmp_path, provider, max_turns=20)

    finished = await agent.run("task")

    assert finished.status is RunStatus.UNVERIFIED
