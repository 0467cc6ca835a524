"""`lathe run`: wire the agent for one headless task and map its end to an exit code."""

from __future__ import annotations

import asyncio
import gc
import os
import signal
import sys
import time
from contextlib import ExitStack
from typing import TYPE_CHECKING, Literal

import click

from lathe import warmup
from lathe.errors import LatheError, UsageError
from lathe.events import (
    AttemptStarted,
    Notice,
    RunFinished,
    RunStarted,
    RunStatus,
    ToolFinished,
    ToolStarted,
)
from lathe.ui.setup import RunOptions, RunSetup, prepare
from lathe.ui.signals import sigterm_as_ctrl_c, stopped_by

if TYPE_CHECKING:
    from collections.abc import Callable

    from lathe.events import AgentEvent
    from lathe.ui.recorder import CheckpointRecorder

_EXIT_CODES = {
    RunStatus.VERIFIED: 0,
    RunStatus.UNVERIFIED: 0,
    RunStatus.FAILED: 1,
    RunStatus.STUCK: 1,
    RunStatus.MAX_TURNS: 1,
    RunStatus.OUT_OF_BUDGET: 1,
    RunStatus.PROVIDER_ERROR: 3,
    RunStatus.INTERRUPTED: 130,
}
# Ends after which another attempt may still succeed; the others are final (out_of_budget
# among them: the budgets bound the whole command, every attempt included).
_ANOTHER_ATTEMPT_MAY_HELP = {RunStatus.FAILED, RunStatus.STUCK, RunStatus.MAX_TURNS}


def run_headless(task: str | None, options: RunOptions, *, as_json: bool) -> int:
    with ExitStack() as cleanup:
        try:
            setup = prepare(options)
            if setup.continued is not None and (kept := setup.continued.said()):
                click.echo(f"lathe: {kept}", err=True)
            cleanup.enter_context(_workspace_held(setup))
        except UsageError as exc:
            click.echo(f"lathe: {exc}", err=True)
            return 2
        except KeyboardInterrupt:  # while waiting for the workspace
            click.echo("lathe: interrupted before the run started", err=True)
            return 130
        terminated: list[int] = []
        try:
            run = _HeadlessRun(setup, as_json, cleanup)
            with sigterm_as_ctrl_c(terminated):
                finished = asyncio.run(run.execute(task))
        except UsageError as exc:
            click.echo(f"lathe: {exc}", err=True)
            return 2
        except KeyboardInterrupt:
            if run.over is None:
                said, code = stopped_by(terminated)
                run.stopped(
                    f"terminated ({signal.Signals(terminated[0]).name})"
                    if terminated
                    else "interrupted by the user (Ctrl-C)"
                )
                click.echo(f"lathe: {said}; resume with `lathe run --continue`", err=True)
                return code
            # Stopped while closing (its MCP servers, its sandbox): the run had ended and
            # shown its end, which stays the last line and gives the exit code.
            finished = run.over
        except LatheError as exc:
            click.echo(f"lathe: {exc}", err=True)
            return 2
    if not as_json and finished.answer:
        from lathe.exec.terminal import visible_text
        from lathe.ui.progress import ReaderMayLeave

        answer = ReaderMayLeave.around(sys.stdout)  # `| head -1` may have closed it
        # Read by a person, or by a script that shows it to one: escape codes written out.
        answer.write(visible_text(finished.answer.rstrip()) + "\n")
        answer.flush()
    return _EXIT_CODES[finished.status]


def _spent(ends: list[RunFinished], elapsed_s: float):
    """What the attempts that ended so far spent, as a `Spend` for the budgets."""
    from lathe.agent.budget import Spend, tokens_of

    spent = Spend()
    for end in ends:
        spent = spent.plus(tokens_of(end.usage), end.cost_usd, 0.0)
    return spent.plus(0, 0.0, elapsed_s)


def _workspace_held(setup: RunSetup):
    """One run at a time may change a workspace; a read-only run changes nothing."""
    from contextlib import nullcontext

    from lathe.workspace_lock import hold_workspace

    if setup.approval == "read-only":
        return nullcontext()
    return hold_workspace(
        setup.workspace,
        doing="lathe run",
        when_busy="or pass --wait to start when it is done",
        wait=setup.options.wait,
        on_wait=lambda message: click.echo(f"lathe: {message}", err=True),
    )


class _HeadlessRun:
    def __init__(self, setup: RunSetup, as_json: bool, cleanup: ExitStack) -> None:
        from lathe.ui.progress import JsonPrinter, ProgressPrinter
        from lathe.ui.recorder import RunTally

        self.setup = setup
        self.as_json = as_json
        self.printer: Callable[[AgentEvent], None] = (
            JsonPrinter()
            if as_json
            else ProgressPrinter(files_changed=self._changed, unrecorded=self._unrecorded)
        )
        self.emit = self.printer
        self.shown = _Shown()  # what the face was shown: the calls it saw start and not end
        self.cleanup = cleanup
        self.recorder = None
        self.observer = None
        self.tally = RunTally()  # the attempt's
        self.changes: CheckpointRecorder | None = None  # the attempt's
        self.origin: Literal["user", "lathe"] = "user"  # whose the task is (RunStarted)
        # The first attempt's check files, each later attempt is judged against.
        self._check_files_at_start: dict[str, str] | None = None
        self._records_checks = False  # the run may start over: its checks are lathe's
        self.ends: _EndHeld | None = None
        self._ended = False  # the attempt's end is recorded and shown (`_end_attempt`)
        self.over: RunFinished | None = None  # the run's last end, once recorded and shown

    async def execute(self, task: str | None) -> RunFinished:
        from lathe.llm.registry import make_provider
        from lathe.obs import Observer, Redactor
        from lathe.ui.recorder import SessionRecorder, changes_note
        from lathe.ui.safety import build_safety

        setup = self.setup
        session, history = self._open_session()
        self.recorder = SessionRecorder(session)
        redactor = Redactor.for_run(setup.secrets(), os.environ)
        self.observer = Observer(
            session.path,
            session.id,
            redactor,
            _each(self.tally, self.emit, self._check_ran, self.shown),
        )
        self.emit = self.ends = held = _EndHeld(self.observer)
        self.cleanup.callback(self.observer.close)
        if history and not (task and task.strip()):
            task, self.origin = setup.words().say("continue_task"), "lathe"
        if not task or not task.strip():
            raise UsageError('give the task as an argument: lathe run "fix the failing test"')
        for notice in setup.notices:
            self.emit(Notice(level="info", message=notice))
        for warning in session.warnings:  # e.g. a torn last line skipped on resume
            self.emit(Notice(level="warning", message=warning))
        # The provider first: its warm-up (its HTTP client's imports) is needed first.
        provider = redactor.provider(make_provider(setup.endpoint))
        safety = build_safety(setup, session, approver=None, emit=self.emit)
        checkpoints = self._checkpoints()
        if history:
            told = await asyncio.to_thread(changes_note, checkpoints, session)
            if told is not None:
                self.recorder.on_message(told)
                history = [*history, told]
        self._offer_children(provider, redactor, session, checkpoints, safety.tools)
        attempts = self._attempts(resumed=bool(history))
        start = None
        started = time.monotonic()
        if attempts > 1:
            start = await asyncio.to_thread(checkpoints.snapshot, "before the run")
            self._records_checks = True
        try:
            finished = await self._attempt(task, history, provider, safety, redactor, checkpoints)
            ends = [finished]
            why_last = ""  # why no further attempt, when the attempts left could have helped
            for attempt in range(2, attempts + 1):
                if finished.status not in _ANOTHER_ATTEMPT_MAY_HELP:
                    break
                spent = _spent(ends, time.monotonic() - started)
                over = self._budget_reached(spent)
                if over:
                    # Said before the attempt's end, which stays the last event.
                    self.emit(Notice(level="info", message=f"no further attempt: {over}"))
                    why_last = f"no further attempt was made: {over}"
                    break
                self._end_attempt(finished)
                reset = await asyncio.to_thread(checkpoints.start_over, start, attempt)
                kept = sorted(reset.kept)
                self.emit(
                    AttemptStarted(
                        attempt=attempt,
                        attempts=attempts,
                        previous_status=finished.status,
                        previous_reason=finished.reason,
                        kept=kept,
                    )
                )
                # The same safety serves every attempt: headless runs have no approver,
                # so it never writes to the session it was built with.
                self.recorder = SessionRecorder(self._new_session())
                self.tally.reset()
                self._ended = False
                finished = await self._attempt(
                    task, [], provider, safety, redactor, checkpoints, spent=spent
                )
                ends.append(finished)
            ends[-1] = self.over = self._end_attempt(finished, why_last)
            self._say_whole_spend(ends)
            return ends[-1]
        except (asyncio.CancelledError, KeyboardInterrupt):
            held.drop()  # stopped before the run said whether another attempt follows
            raise
        finally:
            held.release()  # an end held when something failed after it
            await safety.aclose()
            await provider.aclose()

    async def _attempt(
        self, task, history, provider, safety, redactor, checkpoints, spent=None
    ) -> RunFinished:
        """One attempt at the task; `spent` (a `Spend`) is what earlier attempts of this
        run used, counted against its budgets."""
        from lathe.ui.recorder import files_before_conversation, record_run_start
        from lathe.ui.wiring import build_agent

        assert self.recorder is not None
        agent = build_agent(
            self.setup,
            provider,
            self.emit,
            executor=safety.executor,
            hooks=self._hooks(safety, redactor, checkpoints),
            messages=history,
            tools=safety.tools,
        )
        budget = agent.deps.settings.budget
        if budget is not None and spent is not None:
            agent.deps.settings.budget = budget.after(spent)
        agent.deps.settings.check_files_at_start = self._check_files_at_start
        session_id = self.recorder.session.id
        agent.deps.settings.files_before_conversation = files_before_conversation(
            checkpoints, lambda: session_id
        )
        setup = self.setup
        record_run_start(self.recorder.session, setup, redactor=redactor)
        self.emit(
            RunStarted(
                task=task,
                model=setup.model.model_id,
                workspace=str(setup.workspace),
                session_id=self.recorder.session.id,
                origin=self.origin,
            )
        )
        # What lathe imported and built so far lives as long as the process: collections
        # during the run need not walk it again (a full one cost ~50 ms here).
        gc.freeze()
        warmup.start()
        finished = redactor.event(await agent.run(task))
        if (gate := _verify_gate(agent)) is not None:
            self._check_files_at_start = gate.check_files_at_start
        return finished

    def _end_attempt(self, finished: RunFinished, note: str = "") -> RunFinished:
        """The attempt's end, once the run knows whether another attempt follows:
        recorded in its session, and shown, held until now (`_EndHeld`) so that nothing
        comes after it; `note` adds why the run makes no further attempt to its reason."""
        assert self.recorder is not None and self.ends is not None
        finished = _noted(finished, note)
        self.recorder.record_end(finished)
        self.ends.release(note)
        self._ended = True
        return finished

    def _say_whole_spend(self, ends: list[RunFinished]) -> None:
        """After the last attempt's status line (its own turns and tokens, as its
        `run_finished` says), what all the attempts of the command spent together."""
        if self.as_json or len(ends) < 2:
            return
        from lathe.types import Usage
        from lathe.ui.progress import ReaderMayLeave, spend_text

        usage = sum((end.usage for end in ends), Usage())
        costs = [end.cost_usd for end in ends]
        cost = None if None in costs else sum(c or 0.0 for c in costs)
        line = f"  all {len(ends)} attempts: " + spend_text(
            sum(end.turns for end in ends), usage, cost
        )
        out = ReaderMayLeave.around(sys.stderr)
        out.write(line + "\n")
        out.flush()

    def _check_ran(self, event: AgentEvent) -> None:
        """The verify gate's checks, recorded around (`CheckpointRecorder.observe`) when
        the run may start over: what a check wrote is the run's, which a start-over puts
        back, not the user's."""
        if self._records_checks and self.changes is not None:
            self.changes.observe(event)

    def _offer_children(self, provider, redactor, session, checkpoints, tools) -> None:
        """The task tool, when the model's profile and the config allow children."""
        from lathe.home import lathe_home
        from lathe.ui.children import LocalChildren

        LocalChildren(
            self.setup, provider, redactor, self.emit, parent_session_id=session.id,
            checkpoints=checkpoints, home=lathe_home(), run_tally=self.tally,
        ).register(tools)  # fmt: skip

    def _hooks(self, safety, redactor, checkpoints):
        """The shared chain (`safety.hook_chain`); headless has no taps of its own. Its
        checkpoint recorder also tells the progress lines whether a file changed."""
        from lathe.ui.recorder import CheckpointRecorder
        from lathe.ui.safety import hook_chain

        assert self.recorder is not None
        self.changes = CheckpointRecorder(checkpoints, self.recorder.session)
        return hook_chain(safety, redactor, recorders=[self.recorder, self.changes])

    def _unrecorded(self) -> tuple[str, ...]:
        """The nested repositories the attempt's checkpoints hold no file of."""
        return self.changes.unrecorded if self.changes is not None else ()

    def _changed(self) -> bool:
        """Whether the current attempt has changed a file, for the progress lines."""
        return self.changes is not None and self.changes.changed

    def _attempts(self, *, resumed: bool) -> int:
        config = self.setup.loaded.config.agent
        if config.attempts == 1:
            return 1
        if not config.verify:
            self.emit(
                Notice(
                    level="warning",
                    message=f"attempts = {config.attempts} needs a verify command (--verify) "
                    "to tell a failed attempt from a finished one; this run makes one attempt.",
                )
            )
            return 1
        if resumed:
            self.emit(
                Notice(
                    level="info",
                    message="a continued session makes one attempt: starting over would "
                    "drop the conversation it continues.",
                )
            )
            return 1
        return config.attempts

    def _budget_reached(self, spent) -> str | None:
        """Why no attempt may start after `spent`, or None."""
        from lathe.types import Usage
        from lathe.ui.budgets import run_budget

        budget = run_budget(self.setup.loaded.config.agent)
        return budget.after(spent).exceeded(Usage(), 0.0, 0.0) if budget else None

    def _checkpoints(self):
        from lathe.checkpoint import Checkpoints
        from lathe.home import lathe_home

        return Checkpoints(self.setup.workspace, lathe_home())

    def _new_session(self):
        from lathe.home import lathe_home
        from lathe.session import SessionStore

        model = self.setup.model.name or self.setup.model.model_id
        session = SessionStore(lathe_home()).create(self.setup.workspace, model)
        self.cleanup.callback(session.close_or_discard)
        return session

    def _open_session(self):
        from lathe.home import lathe_home
        from lathe.session import SessionStore

        setup, options = self.setup, self.setup.options
        if options.resume or options.continue_last:
            if setup.continued is None:  # `prepare` found it, and checked its workspace
                raise UsageError(
                    f"no earlier session in {setup.workspace} to continue; "
                    "start one without --continue"
                )
            session = SessionStore(lathe_home()).open(setup.continued.session_id)
            self.cleanup.callback(session.close)
            session.close_dangling_tool_calls()
            return session, session.conversation()
        return self._new_session(), []

    def stopped(self, reason: str) -> None:
        """The run was stopped by a signal, `reason` naming it. An end held for the
        attempt is dropped: it had not said whether another attempt follows. The attempt
        in progress is recorded interrupted in the log and the session (one whose end was
        recorded keeps it: the stop came between attempts). With `--json`, once the run
        started, a `tool_finished` follows for each call shown started and not finished,
        then `run_finished` `interrupted`, the last line, as the exit code says (spent:
        the attempt's so far, nothing between attempts). The terminal gets no end: the
        caller's `lathe:` line says it. Not called once the run's last end was shown
        (`over`): a stop while the run closes adds nothing to it."""
        if self.ends is not None:
            self.ends.drop()
        if not self._ended:
            self.record_interrupt(reason)
        if not self.as_json or not self.shown.run_started:
            return
        from lathe.types import Usage
        from lathe.ui.recorder import RunTally

        for cut in self.shown.open_calls():
            self.printer(cut)
        spent = self.tally if not self._ended else RunTally()
        # Children's replies are in the usage but not in the tally's cost: unknown then.
        cost = spent.cost_usd if spent.children_usage == Usage() else None
        self.printer(
            RunFinished(
                status=RunStatus.INTERRUPTED,
                turns=spent.turns,
                usage=spent.total_usage,
                answer="",
                reason=reason,
                cost_usd=cost,
            )
        )

    def record_interrupt(self, reason: str) -> None:
        if self.observer is not None:
            self.observer.record_interrupt(reason)
        if self.recorder is not None:
            self.recorder.record_interrupt(self.tally, reason)


def _each(*consumers: Callable[[AgentEvent], None]):
    def each(event: AgentEvent) -> None:
        for consumer in consumers:
            consumer(event)

    return each


class _EndHeld:
    """Passes each event on to `inner`, but holds an attempt's `run_finished` until the
    run has decided whether another attempt follows (`release`): a notice that none will
    (the budget reached) had come after it, and `run_finished` is the last line."""

    def __init__(self, inner: Callable[[AgentEvent], None]) -> None:
        self._inner = inner
        self.held: RunFinished | None = None

    def __call__(self, event: AgentEvent) -> None:
        if isinstance(event, RunFinished):
            self.release()
            self.held = event
        else:
            self._inner(event)

    def release(self, note: str = "") -> None:
        """Pass the held end on, `note` added to its reason; nothing when none is held."""
        held, self.held = self.held, None
        if held is not None:
            self._inner(_noted(held, note))

    def drop(self) -> None:
        """Forget the held end: the run was stopped before it could decide (a held
        `failed` had been shown as the end of a run that exits 130)."""
        self.held = None


class _Shown:
    """What the face has been shown: whether a run started, and the calls that started
    and have not finished, for the `tool_finished` a stopped run gives each."""

    def __init__(self) -> None:
        self.run_started = False
        self._open: dict[str, tuple[ToolStarted, float]] = {}  # by call id, with its start

    def __call__(self, event: AgentEvent) -> None:
        if isinstance(event, RunStarted):
            self.run_started = True
        elif isinstance(event, ToolStarted):
            self._open[event.call_id] = (event, time.monotonic())
        elif isinstance(event, ToolFinished):
            self._open.pop(event.call_id, None)

    def open_calls(self) -> list[ToolFinished]:
        """A `tool_finished` for each open call, as the session records it: interrupted."""
        from lathe.session import INTERRUPTED_RESULT

        now, cut = time.monotonic(), []
        for started, at in self._open.values():
            cut.append(
                ToolFinished(
                    call_id=started.call_id,
                    name=started.name,
                    is_error=True,
                    summary="interrupted",
                    duration_ms=round((now - at) * 1000, 1),
                    output=INTERRUPTED_RESULT,
                )
            )
        self._open.clear()
        return cut


def _noted(end: RunFinished, note: str) -> RunFinished:
    """`end` with `note` after its reason."""
    if not note:
        return end
    return end.model_copy(update={"reason": f"{end.reason}; {note}" if end.reason else note})


def _verify_gate(agent):
    """The agent's verify gate, None when the run has no verify command."""
    from lathe.agent.verify import VerifyGate

    return next((h for h in agent.handlers if isinstance(h, VerifyGate)), None)
