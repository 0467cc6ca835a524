"""The agent loop: context → model → tools → stall check → ... → verify gate.

`Agent.run(user_input)` drives one task to an end and returns the `RunFinished` event it
also emits. The conversation (`Agent.messages`) survives between runs, so an
interactive face can call `run` again with the next message.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from lathe.agent.budget import RunBudget, unanswered_calls
from lathe.agent.compaction import ContextManager
from lathe.agent.context import request_messages
from lathe.agent.hooks import AgentHooks
from lathe.agent.stall import StallDetector, StallVerdict, nudge_text
from lathe.agent.tooling import CallsOutcome, ToolRunner
from lathe.agent.verify import (
    EvidenceTracker,
    applied_message,
    baseline_message,
    failure_message,
    passed,
    reply_code_note,
    run_verify,
    unusable_reason,
)
from lathe.errors import ContextTooLong, ProviderError, UsageError
from lathe.events import (
    REPLY_CODE_CALL_PREFIX,
    AgentEvent,
    AssistantReply,
    ModelRequestFinished,
    Notice,
    Retrying,
    RunFinished,
    RunStatus,
    StallNudge,
    TextDelta,
    ThinkingDelta,
    ToolFinished,
    TurnStarted,
    VerifyFinished,
    VerifyStarted,
)
from lathe.exec.base import ExecResult
from lathe.llm import base as llm
from lathe.llm.retry import RetryPolicy, stream_with_retry
from lathe.tools.base import ToolContext, ToolRegistry
from lathe.types import (
    AssistantMessage,
    Message,
    StopReason,
    ToolCall,
    ToolResultMessage,
    Usage,
    UserMessage,
)

Emit = Callable[[AgentEvent], None]

_CUT_OFF_NOTE = (
    "Your reply was cut off by the output token limit. Continue where you stopped; keep "
    "tool arguments short (edit a small region rather than writing whole files)."
)
_CUT_OFF_CALL = (
    "Not run: your reply was cut off by the output token limit, so this call's arguments "
    "may be incomplete. Take a smaller step: change a few lines per edit call, or split "
    "the work over several calls."
)
_EMPTY_ONCE = "the model sent an empty reply; asking again"
_EMPTY_TWICE = "the model sent an empty reply (no text, no tool call) twice in a row"
_CUT_BY_DEADLINE = (
    "stopped: the run's time budget was reached before this call finished (it may have "
    "run in part, or not at all); check the workspace state before repeating it"
)


class VerifyCannotRun(UsageError):
    """The verify command cannot run at all (exit 126 or 127) before any change; the
    run stops before the first model call."""


@dataclass
class AgentSettings:
    max_turns: int = 50
    verify_command: str | None = None
    verify_timeout_s: float = 900.0
    verify_first: bool = False  # run the check before the first turn of a new conversation
    # After a failed check, apply code a "done" reply shows as edits (agent/reply_code.py).
    apply_reply_code: bool = False
    stall_repeat_limit: int = 3
    retry: RetryPolicy = field(default_factory=RetryPolicy)
    max_output_tokens: int | None = None
    temperature: float | None = None
    # Merged into every model request's body (`ModelRequest.extra`), e.g. a local
    # server's chat_template_kwargs.
    request_extra: dict[str, object] = field(default_factory=dict)
    price: Callable[[Usage], float] | None = None  # dollars for a reply's usage; None: unknown
    budget: RunBudget | None = None  # limits on tokens, dollars and wall time (agent/budget.py)


@dataclass
class AgentDeps:
    provider: llm.Provider
    tools: ToolRegistry
    tool_context: ToolContext
    system_prompt: str
    settings: AgentSettings = field(default_factory=AgentSettings)
    hooks: AgentHooks = field(default_factory=AgentHooks)
    context: ContextManager | None = None  # None: send the whole history every time


class Agent:
    def __init__(self, deps: AgentDeps, emit: Emit, messages: list[Message] | None = None):
        self.deps = deps
        self.emit = emit
        self.messages: list[Message] = list(messages or [])
        self.usage = Usage()
        # How the run in progress ends, for the time budget that cuts it from outside.
        self._finish: Callable[..., RunFinished] | None = None

    def append(self, message: Message) -> None:
        self.messages.append(message)
        self.deps.hooks.on_message(message)

    async def run(self, user_input: str) -> RunFinished:
        await self.deps.hooks.on_run_start(user_input)
        finished = await self._run_in_time(user_input)
        await self.deps.hooks.on_run_end(finished)
        return finished

    async def _run_in_time(self, user_input: str) -> RunFinished:
        """`_run` under the time budget: one deadline over the whole run, which may cut
        a reply mid-stream (nothing of it enters the history), a tool call or the check.
        Every call the cut leaves without a result gets one saying so."""
        budget = self.deps.settings.budget
        limit = budget.time_left() if budget else None
        if budget is None or limit is None:
            return await self._run(user_input)
        started = time.monotonic()
        deadline = asyncio.timeout(limit)
        try:
            async with deadline:
                return await self._run(user_input)
        except TimeoutError:
            if not deadline.expired():
                raise  # not the budget's deadline
        for call in unanswered_calls(self.messages):
            self.emit(
                ToolFinished(
                    call_id=call.id, name=call.name, is_error=True,
                    summary="stopped: the time budget was reached", duration_ms=0.0,
                )
            )  # fmt: skip
            self.append(
                ToolResultMessage(
                    tool_call_id=call.id, name=call.name, content=_CUT_BY_DEADLINE, is_error=True
                )
            )
        assert self._finish is not None  # set by _run before its first await
        reason = budget.out_of_time(time.monotonic() - started)
        return self._finish(RunStatus.OUT_OF_BUDGET, reason=reason)

    async def _run(self, user_input: str) -> RunFinished:
        settings = self.deps.settings
        runner = ToolRunner(self.deps, self.emit)
        stall = StallDetector(settings.stall_repeat_limit)
        evidence = EvidenceTracker()
        usage_before = self.usage
        cost = 0.0
        verify_failed = False
        # Verify failures in a row with no tool call between: the model is claiming
        # "done" without acting on the failure, a stall like a repeated call.
        idle_claims = 0
        baseline = settings.verify_command if settings.verify_first and not self.messages else None
        turn = 0
        empty_replies = 0
        started = time.monotonic()

        def finish(status: RunStatus, answer: str = "", reason: str = "") -> RunFinished:
            event = RunFinished(
                status=status,
                turns=turn,
                usage=_difference(self.usage, usage_before),
                answer=answer,
                reason=reason,
                evidence=evidence.latest if status is RunStatus.UNVERIFIED else None,
                cost_usd=cost if settings.price else None,
            )
            self.emit(event)
            return event

        self._finish = finish
        # The task is recorded before anything runs, so a crash during the baseline check
        # leaves a session that `--continue` can pick up with its task.
        self.append(UserMessage(content=user_input))
        if baseline:
            self.append(UserMessage(content=await self._baseline(baseline)))

        while turn < settings.max_turns:
            # Budgets: what the run has spent may forbid the next request.
            over = self._over_budget(usage_before, cost if settings.price else None, started)
            if over:
                return finish(RunStatus.OUT_OF_BUDGET, reason=over)
            turn += 1
            self.emit(TurnStarted(turn=turn))
            try:
                reply = await self._complete(turn)
            except ProviderError as exc:
                return finish(RunStatus.PROVIDER_ERROR, reason=str(exc))
            self.usage = self.usage + reply.usage
            cost += settings.price(reply.usage) if settings.price else 0.0
            # An empty reply is not kept: an empty assistant turn is no part of the
            # conversation. Asked again once; twice, the check decides as for "done".
            if _is_empty(reply):
                empty_replies += 1
                if empty_replies == 1:
                    self.emit(Notice(level="warning", message=_EMPTY_ONCE))
                    continue
                if not settings.verify_command:
                    return finish(RunStatus.PROVIDER_ERROR, reason=_EMPTY_TWICE)
            else:
                empty_replies = 0
                self.append(reply)
            if self.deps.context:
                self.deps.context.record_usage(reply.usage, len(self.messages))
            self.emit(AssistantReply(message=reply))

            if reply.tool_calls and reply.stop_reason is StopReason.MAX_TOKENS:
                for result in runner.refuse_calls(reply.tool_calls, _CUT_OFF_CALL):
                    self.append(result)
                continue

            if reply.tool_calls:
                idle_claims = 0
                outcome = await runner.run_calls(turn, reply.tool_calls, stall, evidence)
                for result in outcome.results:
                    self.append(result)
                if outcome.verdict is StallVerdict.STUCK:
                    return finish(
                        RunStatus.STUCK,
                        reason=f"the model kept repeating the same {outcome.stalled_tool} call",
                    )
                if outcome.verdict is StallVerdict.NUDGE:
                    self.emit(StallNudge(tool=outcome.stalled_tool, repeats=stall.repeats))
                    self.append(UserMessage(content=nudge_text(stall.description)))
                continue

            if reply.stop_reason is StopReason.MAX_TOKENS:
                self.append(UserMessage(content=_CUT_OFF_NOTE))
                continue

            if not settings.verify_command:
                return finish(RunStatus.UNVERIFIED, answer=reply.text)
            result = await self._verify(settings.verify_command)
            if passed(result):
                return finish(RunStatus.VERIFIED, answer=reply.text)
            applied = CallsOutcome()
            if settings.apply_reply_code:
                applied = await self._apply_reply_code(turn, reply.text, runner, stall, evidence)
            notes = [reply_code_note(r) for r in applied.results]
            if any(not r.is_error for r in applied.results):
                idle_claims = 0
                result = await self._verify(settings.verify_command)
                if passed(result):
                    # In the history, so a later message of the conversation knows of them.
                    record = applied_message(notes, settings.verify_command, result)
                    self.append(UserMessage(content=record))
                    return finish(RunStatus.VERIFIED, answer=reply.text)
            else:
                idle_claims += 1
            verify_failed = True
            feedback = failure_message(settings.verify_command, result, reply.text, applied=notes)
            if applied.verdict is StallVerdict.STUCK:
                self.append(UserMessage(content=feedback))
                return finish(
                    RunStatus.STUCK, reason="the model kept showing the same change to a file"
                )
            if idle_claims >= settings.stall_repeat_limit:
                return finish(
                    RunStatus.STUCK,
                    reason=f"the model said it was done {idle_claims} times in a row without "
                    f"acting on the failing `{settings.verify_command}`",
                )
            if applied.verdict is StallVerdict.NUDGE:
                self.emit(StallNudge(tool=applied.stalled_tool, repeats=stall.repeats))
                feedback += "\n\n" + nudge_text(stall.description)
            self.append(UserMessage(content=feedback))

        if verify_failed:
            return finish(
                RunStatus.FAILED,
                reason=f"the verify command still failed after {turn} turns",
            )
        return finish(RunStatus.MAX_TURNS, reason=f"the turn limit ({settings.max_turns}) ran out")

    def _over_budget(self, usage_before: Usage, cost: float | None, started: float) -> str | None:
        budget = self.deps.settings.budget
        if budget is None:
            return None
        usage = _difference(self.usage, usage_before)
        return budget.exceeded(usage, cost, time.monotonic() - started)

    async def _complete(self, turn: int) -> AssistantMessage:
        """One model reply, streamed, retried on transient errors, and shrunk-and-retried
        once when the provider says the context is too long."""
        shrunk = False
        while True:
            try:
                return await self._stream_once(turn)
            except ContextTooLong:
                context = self.deps.context
                if shrunk or not context:
                    raise
                if not await context.compact(self.messages, reason="context_too_long"):
                    raise
                shrunk = True

    async def _stream_once(self, turn: int) -> AssistantMessage:
        deps = self.deps
        if deps.context:
            messages = await deps.context.prepare(self.messages)
        else:
            messages = request_messages(self.messages)
        request = llm.ModelRequest(
            system=deps.system_prompt,
            messages=messages,
            tools=deps.tools.specs(),
            max_output_tokens=deps.settings.max_output_tokens,
            temperature=deps.settings.temperature,
            extra=dict(deps.settings.request_extra),
        )

        started = time.monotonic()
        first_token: float | None = None
        retries = 0

        def on_retry(attempt: int, max_attempts: int, wait_s: float, error: ProviderError) -> None:
            nonlocal retries, first_token
            retries, first_token = retries + 1, None
            self.emit(
                Retrying(
                    attempt=attempt, max_attempts=max_attempts, wait_s=wait_s, error=str(error)
                )
            )

        stream = stream_with_retry(
            lambda: deps.provider.stream(request), deps.settings.retry, on_retry
        )
        async for event in stream:
            match event:
                case llm.TextDelta(text=text):
                    first_token = first_token or time.monotonic()
                    self.emit(TextDelta(text=text))
                case llm.ThinkingDelta(text=text):
                    first_token = first_token or time.monotonic()
                    self.emit(ThinkingDelta(text=text))
                case llm.Completed(message=message):
                    price = deps.settings.price
                    self.emit(
                        ModelRequestFinished(
                            turn=turn,
                            model=message.model or deps.provider.model,
                            parameters={
                                "max_output_tokens": request.max_output_tokens,
                                "temperature": request.temperature,
                                "tools": len(request.tools),
                                "messages": len(request.messages),
                            },
                            latency_ms=(time.monotonic() - started) * 1000,
                            first_token_ms=(first_token - started) * 1000 if first_token else None,
                            retries=retries,
                            usage=message.usage,
                            stop_reason=message.stop_reason.value,
                            cost_usd=price(message.usage) if price else None,
                        )
                    )
                    return message
        raise ProviderError("the provider's stream ended without a reply")

    async def _apply_reply_code(
        self,
        turn: int,
        text: str,
        runner: ToolRunner,
        stall: StallDetector,
        evidence: EvidenceTracker,
    ) -> CallsOutcome:
        """Code the reply shows, applied through the `edit` tool (so the policy gate,
        checkpoints and events treat it like a call the model made)."""
        if "```" not in text or self.deps.tools.get("edit") is None:
            return CallsOutcome()
        # Imported here: only small models after a failed check need it, and its
        # patterns cost every run's start-up otherwise.
        from lathe.agent.reply_code import workspace_edits

        ctx = self.deps.tool_context
        edits = await asyncio.to_thread(
            workspace_edits, ctx.workspace, text, deny_read=ctx.deny_read
        )
        calls = [
            ToolCall(
                id=f"{REPLY_CODE_CALL_PREFIX}{turn}_{n}",
                name="edit",
                arguments=json.dumps(e.arguments()),
            )
            for n, e in enumerate(edits, 1)
        ]
        if not calls:
            return CallsOutcome()
        return await runner.run_calls(turn, calls, stall, evidence)

    async def _baseline(self, command: str) -> str:
        """The check run before the model starts, said right after the task: the model
        begins from the real failure instead of a guess at it. Raises VerifyCannotRun
        when the command cannot run at all: no model call could fix that."""
        result = await self._verify(command, baseline=True)
        reason = unusable_reason(command, result)
        if reason:
            raise VerifyCannotRun(reason)
        return baseline_message(command, result)

    async def _verify(self, command: str, *, baseline: bool = False) -> ExecResult:
        ctx = self.deps.tool_context
        self.emit(VerifyStarted(command=command, baseline=baseline))
        result = await run_verify(
            command,
            ctx.executor,
            workspace=ctx.workspace,
            timeout_s=self.deps.settings.verify_timeout_s,
            max_output_bytes=ctx.limits.output_max_bytes,
            spill_dir=ctx.spill_dir,
        )
        self.emit(
            VerifyFinished(
                command=command,
                exit_code=result.exit_code,
                passed=passed(result),
                output_tail=result.output[-2000:],
                baseline=baseline,
            )
        )
        return result


def _is_empty(reply: AssistantMessage) -> bool:
    """No text and no call, and not cut off (a cut-off reply gets "continue")."""
    cut_off = reply.stop_reason is StopReason.MAX_TOKENS
    return not reply.tool_calls and not reply.text.strip() and not cut_off


def _difference(total: Usage, before: Usage) -> Usage:
    return Usage(
        input_tokens=total.input_tokens - before.input_tokens,
        output_tokens=total.output_tokens - before.output_tokens,
        cache_read_tokens=total.cache_read_tokens - before.cache_read_tokens,
        cache_write_tokens=total.cache_write_tokens - before.cache_write_tokens,
    )
