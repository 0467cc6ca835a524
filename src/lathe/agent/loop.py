"""The agent loop: context → model → tools → ... until a finish handler ends the run.

`Agent.run(user_input)` drives one task to an end and returns the `RunFinished` event it
also emits. The conversation (`Agent.messages`) survives between runs, so an
interactive face can call `run` again with the next message.

The loop only asks the model, runs the calls of its reply and records both. What a reply
means for the run — the verify gate, a stall, a reply cut off or empty, a budget — is
decided by the finish handlers (`agent/finish.py`), asked after every step.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace

from lathe.agent.budget import RunBudget
from lathe.agent.compaction import ContextManager
from lathe.agent.context import unanswered_calls
from lathe.agent.finish import (
    MAX_LATHE_ROUNDS,
    CallRecord,
    Combined,
    ContinueWith,
    Decision,
    Finish,
    FinishHandler,
    RunState,
)
from lathe.agent.replies import is_empty
from lathe.agent.request_view import RequestView
from lathe.agent.tooling import ToolRunner, refused_results, result_message
from lathe.errors import ContextTooLong, ProviderError
from lathe.events import (
    AgentEvent,
    AssistantReply,
    ModelRequestFinished,
    Retrying,
    RunError,
    RunFinished,
    RunStatus,
    TextDelta,
    ThinkingDelta,
    TurnStarted,
)
from lathe.hooks.base import AgentHooks
from lathe.llm import base as llm
from lathe.llm.retry import RetryPolicy, stream_with_retry
from lathe.tools.base import ToolContext, ToolOutput, ToolRegistry
from lathe.types import AssistantMessage, Message, ToolResultMessage, Usage, UserMessage
from lathe.words import Words, load_words

Emit = Callable[[AgentEvent], None]


@dataclass
class AgentSettings:
    max_turns: int = 50
    verify_command: str | None = None
    verify_timeout_s: float = 900.0
    verify_first: bool = False  # run the check before the first turn of a new conversation
    # The check files' digests to judge the run against (another attempt of one task
    # keeps the first's); None: taken when the run begins.
    check_files_at_start: dict[str, str] | None = None
    # Each file, among those the filter wants, that the conversation's earlier runs
    # changed, as it was before them (None: absent); None: unknown (no checkpoints). A
    # conversation that goes on is judged against these (`Checkpoints.before_session`).
    files_before_conversation: Callable[[Callable[[str], bool]], dict[str, bytes | None]] | None = (
        None
    )
    # Bytes of the check's output the model is shown, when fewer than the tool output limit.
    verify_output_bytes: int | None = None
    # Bytes of the code a failed check ran through shown after its output (None: none),
    # from files matching neither the edit deny rules nor these patterns.
    failure_code_bytes: int | None = None
    failure_code_leave_out: Sequence[str] = ()
    # After a failed check, apply code a "done" reply shows as edits (agent/reply_code.py).
    apply_reply_code: bool = False
    # The temperature of the samples after a reply that repeats an earlier one (None: as
    # every other; agent/repeats.py).
    repeat_temperature: float | None = None
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
    finish: Sequence[FinishHandler] | None = None
    """The finish handlers, in order; None: `agent.ending.standard_handlers` for the
    settings."""
    words: Words = field(default_factory=load_words)
    """What lathe says to the model (the profile's template set)."""


@dataclass
class RunSpending:
    """What this run has used so far (`RunState.spent`)."""

    usage: Usage = field(default_factory=Usage)
    cost_usd: float = 0.0
    started: float = field(default_factory=time.monotonic)
    unpriced_calls: bool = False  # a subagent of unknown cost spent some of it
    heard: bool = False  # the model answered something: a reply, or the start of one
    # What the model request in flight last failed with (None once the model answers):
    # a deadline that cuts the run meanwhile says so (`BudgetGuard`).
    failing: ProviderError | None = None

    def elapsed_s(self) -> float:
        return time.monotonic() - self.started

    def count(self, output: ToolOutput) -> None:
        """Add what a tool call spent on models (`ToolOutput.spent`: a subagent's)."""
        if output.spent is not None:
            self.usage = self.usage + output.spent
            self.cost_usd += output.spent_usd or 0.0
            self.unpriced_calls |= output.spent_usd is None and output.spent != Usage()


class Agent:
    def __init__(self, deps: AgentDeps, emit: Emit, messages: list[Message] | None = None):
        self.deps = deps
        self.emit = emit
        self.messages: list[Message] = list(messages or [])
        self.usage = Usage()
        self.handlers: list[FinishHandler] = []
        self._request_view = RequestView()  # used when no context manager prunes
        self._running: tuple[RunState, RunSpending] | None = None  # the run going on
        if deps.context:  # a summary request is the agent's, made in a run or not
            deps.context.on_reply = self._counted
        self._call_ids = {
            call.id
            for message in self.messages
            if isinstance(message, AssistantMessage)
            for call in message.tool_calls
        }

    def append(self, message: Message) -> None:
        if isinstance(message, AssistantMessage):
            message = self._with_unused_ids(message)
            self._call_ids.update(call.id for call in message.tool_calls)
        self.messages.append(message)
        self.deps.hooks.on_message(message)

    def _with_unused_ids(self, reply: AssistantMessage) -> AssistantMessage:
        """`reply` with each call id an earlier call of the conversation used made new: a
        server giving `call_0` every turn had results and pruned stubs name the wrong
        call."""
        if not any(call.id in self._call_ids for call in reply.tool_calls):
            return reply
        taken, calls = set(self._call_ids), []
        for call in reply.tool_calls:
            new_id, n = call.id, 1
            while new_id in taken:
                new_id, n = f"{call.id}_{n}", n + 1
            taken.add(new_id)
            calls.append(replace(call, id=new_id))
        return replace(reply, tool_calls=tuple(calls))

    async def run(self, user_input: str) -> RunFinished:
        """The run, start and stop hooks included: the time limit holds over them too
        (a session_start hook or an MCP server's start-up that hangs, a stop hook that
        takes its time), so a run given N seconds ends within them."""
        try:
            return await self._run(user_input)
        finally:
            self._running = None  # a summary asked for after it is no spend of this run

    async def _run(self, user_input: str) -> RunFinished:
        if self.deps.finish is None:  # built per run, from the deps as they are now
            from lathe.agent.ending import standard_handlers

            self.handlers = standard_handlers(self.deps)
        else:
            self.handlers = list(self.deps.finish)
        spend = RunSpending()
        run = RunState(emit=self.emit, new_conversation=not self.messages, spent=spend)
        runner = ToolRunner(self.deps, self.emit)
        hooks = self.deps.hooks
        self._running = (run, spend)  # a compaction's summary requests are the run's too
        # The task is recorded before anything runs, so a crash or a deadline during a
        # start hook or a handler's start (the baseline check) leaves a session that
        # `--continue` can pick up.
        self.append(UserMessage(content=user_input))
        limits = [x for x in (h.time_limit(run) for h in self.handlers) if x is not None]
        limit = min(limits, key=lambda x: x.seconds, default=None)
        timer = asyncio.timeout(limit.seconds if limit is not None else None)  # None: none
        try:
            async with timer:
                await hooks.on_run_start(user_input)
                finished = await self._steps(run, spend, runner)
        except TimeoutError:
            if limit is None or not timer.expired():
                raise  # not the run's deadline
            end = limit.end(spend.elapsed_s())
            self._answer_cut_calls(runner, end.reason)
            finished = self._finished(end, run, spend)
        except asyncio.CancelledError:
            # The face answers the calls left (`interrupted`); one that finished keeps its
            # result: the model had been told a file it wrote was never written.
            self._answer_finished_calls(runner)
            raise
        with contextlib.suppress(TimeoutError):  # stop hooks past the deadline are cut
            async with asyncio.timeout_at(timer.when()):
                await hooks.on_run_end(finished)
        return finished

    def _answer_cut_calls(self, runner: ToolRunner, reason: str) -> None:
        """The run was cut mid-step: a reply still streaming left nothing, but the calls
        of the last reply need results so the conversation can be sent again
        (`--continue`). A call that finished gets its real result, one still running says
        it may have run in part, one not started that it never ran."""
        self._answer_finished_calls(runner)
        for call in unanswered_calls(self.messages):
            began = runner.running.get(call.id)
            running = began is not None
            text = self.deps.words.say(
                "call_cut_short" if running else "call_not_run", reason=reason
            )
            summary = "stopped: time limit" if running else "not run: time limit"
            seen = call.id in runner.announced
            ran_ms = (time.monotonic() - began) * 1000 if began is not None else 0.0
            for result in refused_results(
                [call], text, summary, self.emit, started=seen, duration_ms=ran_ms
            ):
                self.append(result)

    def _answer_finished_calls(self, runner: ToolRunner) -> None:
        """The real result of each call of the last reply that finished before the step
        was cut short."""
        for call in unanswered_calls(self.messages):
            if (output := runner.finished.get(call.id)) is not None:
                self.append(result_message(call, output))

    async def _steps(self, run: RunState, spend: RunSpending, runner: ToolRunner) -> RunFinished:
        settings = self.deps.settings
        for handler in self.handlers:
            for message in await handler.begin(run):
                self.append(message)

        while run.turn < settings.max_turns:
            spent = next((f for f in (h.before_request(run) for h in self.handlers) if f), None)
            if spent is not None:  # the verify gate checks a change it has not seen first
                return self._finished(await self._ending(spent, run), run, spend)
            run.turn += 1
            self.emit(TurnStarted(turn=run.turn))
            try:
                reply = await self._complete(run, spend)
            except ProviderError as exc:
                error = RunError.from_provider_error(exc)
                failed = Finish(RunStatus.PROVIDER_ERROR, reason=str(exc), error=error)
                return self._finished(failed, run, spend)
            if not is_empty(reply):  # an empty reply is no part of the conversation
                self.append(reply)
                reply = self.messages[-1]  # its call ids made unique
                self.emit(AssistantReply(message=reply))
            if self.deps.context:
                self.deps.context.record_usage(reply.usage, len(self.messages))

            decision = await self._after_reply(reply, run)
            if decision is not None:
                self._answer_open_calls(reply, decision)
            elif reply.tool_calls:
                records = await runner.run_calls(run.turn, reply.tool_calls)
                for record in records:
                    self.append(result_message(record.call, record.output))
                    spend.count(record.output)
                decision = await self._after_calls(records, run, by_lathe=False)
            else:
                decision = Finish(RunStatus.UNVERIFIED, answer=reply.text)
            end = await self._settle(decision, run, runner)
            if end is not None:
                return self._finished(end, run, spend)

        for handler in self.handlers:
            end = await handler.out_of_turns(run)
            if end is not None:
                return self._finished(end, run, spend)
        ran_out = Finish(
            RunStatus.MAX_TURNS, reason=f"the turn limit ({settings.max_turns}) ran out"
        )
        return self._finished(ran_out, run, spend)

    async def _after_reply(self, reply: AssistantMessage, run: RunState) -> Decision | None:
        for handler in self.handlers:
            decision = await handler.after_reply(reply, run)
            if decision is not None:
                return decision
        return None

    async def _after_calls(
        self, records: Sequence[CallRecord], run: RunState, *, by_lathe: bool
    ) -> Decision:
        combined = Combined()
        for handler in self.handlers:
            combined.add(await handler.after_calls(records, run, by_lathe=by_lathe))
            if combined.finish is not None:
                end = combined.finish
                return replace(end, messages=(*combined.messages, *end.messages))
        return ContinueWith(combined.messages, combined.calls, combined.note)

    def _answer_open_calls(self, reply: AssistantMessage, decision: Decision) -> None:
        """A handler took the reply over, so its calls do not run: each one the decision
        does not answer itself gets an error result, and the conversation never holds an
        unanswered call."""
        answered = {m.tool_call_id for m in decision.messages if isinstance(m, ToolResultMessage)}
        open_calls = [call for call in reply.tool_calls if call.id not in answered]
        if not open_calls:
            return
        reason = decision.reason if isinstance(decision, Finish) else ""
        text = self.deps.words.say("call_not_run", reason=reason or "lathe stopped it")
        for result in refused_results(open_calls, text, "not run", self.emit):
            self.append(result)

    async def _settle(self, decision: Decision, run: RunState, runner: ToolRunner) -> Finish | None:
        """Apply a decision: record its messages, run the calls lathe makes itself and ask
        the handlers about them. The end of the run, or None to go on."""
        for rounds in range(MAX_LATHE_ROUNDS + 1):
            if isinstance(decision, Finish):  # its messages enter with the end (`_finished`)
                return await self._ending(decision, run)
            for message in decision.messages:
                self.append(message)
            if not decision.calls or rounds == MAX_LATHE_ROUNDS:
                return None
            records = await runner.run_calls(run.turn, decision.calls, note=decision.note)
            decision = await self._after_calls(records, run, by_lathe=True)
        return None

    async def _ending(self, end: Finish, run: RunState) -> Finish:
        """The run's end: `end`, or what the first handler whose `ending` answers makes
        of it."""
        for handler in self.handlers:
            if (instead := await handler.ending(end, run)) is not None:
                return instead
        return end

    def _finished(self, end: Finish, run: RunState, spend: RunSpending) -> RunFinished:
        """The run ends: `end`'s messages enter the conversation, then `run_finished` is
        emitted."""
        for message in end.messages:
            self.append(message)
        event = RunFinished(
            status=end.status,
            turns=run.turn,
            usage=spend.usage,
            answer=end.answer,
            reason=end.reason,
            evidence=end.evidence,
            # Unknown, not lower, when a part of it is: "$0.0001" would hide a child's.
            cost_usd=(
                spend.cost_usd if self.deps.settings.price and not spend.unpriced_calls else None
            ),
            error=end.error,
        )
        self.emit(event)
        return event

    async def _complete(self, run: RunState, spend: RunSpending) -> AssistantMessage:
        """One model reply, streamed, retried on transient errors, and shrunk-and-retried
        when the provider says the context is too long (`ContextManager.shrink` says
        how often)."""
        shrunk = False
        while True:
            try:
                return await self._stream_once(run, spend)
            except ContextTooLong as exc:
                context = self.deps.context
                if not context:
                    raise
                if not await context.shrink(self.messages, refusal=exc, again=shrunk):
                    raise exc.reworded(context.cannot_fit(self.messages, exc)) from exc
                shrunk = True

    async def _stream_once(self, run: RunState, spend: RunSpending) -> AssistantMessage:
        deps = self.deps
        max_output = deps.settings.max_output_tokens
        if deps.context:
            messages = await deps.context.prepare(self.messages)
            max_output = deps.context.output_tokens(max_output)
        else:
            messages = self._request_view.update(self.messages, None)
        request = llm.ModelRequest(
            system=deps.system_prompt,
            messages=messages,
            tools=deps.tools.specs(),
            max_output_tokens=max_output,
            temperature=deps.settings.temperature if run.temperature is None else run.temperature,
            extra=dict(deps.settings.request_extra),
        )

        started = time.monotonic()
        first_token: float | None = None
        retries = 0

        def on_retry(attempt: int, max_attempts: int, wait_s: float, error: ProviderError) -> None:
            nonlocal retries, first_token
            retries, first_token, spend.failing = retries + 1, None, error
            self.emit(
                Retrying(
                    attempt=attempt, max_attempts=max_attempts, wait_s=wait_s, error=str(error)
                )
            )

        stream = stream_with_retry(
            lambda: deps.provider.stream(request), deps.settings.retry, on_retry
        )
        async for event in stream:
            spend.heard, spend.failing = True, None
            match event:
                case llm.TextDelta(text=text):
                    first_token = first_token or time.monotonic()
                    self.emit(TextDelta(text=text))
                case llm.ThinkingDelta(text=text):
                    first_token = first_token or time.monotonic()
                    self.emit(ThinkingDelta(text=text))
                case llm.Completed(message=message):
                    latency_ms = (time.monotonic() - started) * 1000
                    first_ms = (first_token - started) * 1000 if first_token else None
                    self._counted(request, message, latency_ms, retries, first_ms)
                    return message
        raise ProviderError("the provider's stream ended without a reply")

    def _counted(
        self,
        request: llm.ModelRequest,
        message: AssistantMessage,
        latency_ms: float,
        retries: int,
        first_token_ms: float | None = None,
    ) -> None:
        """A model reply, a turn's or a compaction summary's: reported (`model_request`)
        and counted in the agent's usage; during a run, in the run's usage and cost too,
        which its budgets judge. A summary asked for outside a run (before the first
        run or between two) has no run's budget and no turn (0)."""
        price = self.deps.settings.price
        cost = price(message.usage) if price else None
        self.emit(
            ModelRequestFinished(
                turn=self._running[0].turn if self._running else 0,
                model=message.model or self.deps.provider.model,
                parameters={
                    "max_output_tokens": request.max_output_tokens,
                    "temperature": request.temperature,
                    "tools": len(request.tools),
                    "messages": len(request.messages),
                },
                latency_ms=latency_ms,
                first_token_ms=first_token_ms,
                retries=retries,
                usage=message.usage,
                stop_reason=message.stop_reason.value,
                cost_usd=cost,
            )
        )
        self.usage = self.usage + message.usage
        if self._running:
            spend = self._running[1]
            spend.usage = spend.usage + message.usage
            spend.cost_usd += cost or 0.0
