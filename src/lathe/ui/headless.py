"""`lathe run`: wire the agent for one headless task and map its end to an exit code."""

from __future__ import annotations

import asyncio
import sys
from contextlib import ExitStack

import click

from lathe.errors import LatheError, UsageError
from lathe.events import Notice, RunFinished, RunStarted, RunStatus
from lathe.ui.setup import RunOptions, RunSetup, prepare

_EXIT_CODES = {
    RunStatus.VERIFIED: 0,
    RunStatus.UNVERIFIED: 0,
    RunStatus.FAILED: 1,
    RunStatus.STUCK: 1,
    RunStatus.MAX_TURNS: 1,
    RunStatus.PROVIDER_ERROR: 3,
    RunStatus.INTERRUPTED: 130,
}
CONTINUE_TASK = "Continue the task from where you stopped."


def run_headless(task: str | None, options: RunOptions, *, as_json: bool) -> int:
    try:
        setup = prepare(options)
    except UsageError as exc:
        click.echo(f"lathe: {exc}", err=True)
        return 2
    with ExitStack() as cleanup:
        try:
            run = _HeadlessRun(setup, as_json, cleanup)
            finished = asyncio.run(run.execute(task))
        except UsageError as exc:
            click.echo(f"lathe: {exc}", err=True)
            return 2
        except KeyboardInterrupt:
            run.record_interrupt()
            click.echo("lathe: interrupted; resume with `lathe run --continue`", err=True)
            return 130
        except LatheError as exc:
            click.echo(f"lathe: {exc}", err=True)
            return 2
    if not as_json and finished.answer:
        sys.stdout.write(finished.answer.rstrip() + "\n")
    return _EXIT_CODES[finished.status]


class _HeadlessRun:
    def __init__(self, setup: RunSetup, as_json: bool, cleanup: ExitStack) -> None:
        from lathe.ui.progress import JsonPrinter, ProgressPrinter

        self.setup = setup
        self.emit = JsonPrinter() if as_json else ProgressPrinter()
        self.cleanup = cleanup
        self.recorder = None
        self.observer = None

    async def execute(self, task: str | None) -> RunFinished:
        from lathe.agent.hooks import HookChain
        from lathe.llm.registry import make_provider
        from lathe.obs import Observer, Redactor
        from lathe.ui.recorder import SessionRecorder
        from lathe.ui.safety import build_safety
        from lathe.ui.wiring import build_agent

        setup = self.setup
        session, history = self._open_session()
        self.recorder = SessionRecorder(session)
        redactor = Redactor(setup.model.secrets())
        self.observer = self.emit = Observer(session.path, session.id, redactor, self.emit)
        self.cleanup.callback(self.observer.close)
        if history and not (task and task.strip()):
            task = CONTINUE_TASK
        if not task or not task.strip():
            raise UsageError('give the task as an argument: lathe run "fix the failing test"')
        for notice in setup.notices:
            self.emit(Notice(level="info", message=notice))
        for warning in session.warnings:  # e.g. a torn last line skipped on resume
            self.emit(Notice(level="warning", message=warning))
        safety = build_safety(setup, session, approver=None, emit=self.emit)
        provider = make_provider(setup.endpoint)
        try:
            agent = build_agent(
                setup,
                provider,
                self.emit,
                executor=safety.executor,
                hooks=HookChain(
                    [
                        safety.gate,
                        *safety.hooks,
                        redactor,
                        redactor.guard(self.recorder),
                        self._checkpoints(session),
                    ]
                ),
                messages=history,
            )
            self.emit(
                RunStarted(task=task, model=setup.model.model_id, workspace=str(setup.workspace))
            )
            finished = redactor.event(await agent.run(task))
            self.recorder.record_end(finished)
            return finished
        finally:
            await provider.aclose()

    def _checkpoints(self, session):
        from lathe.checkpoint import Checkpoints
        from lathe.home import lathe_home
        from lathe.ui.recorder import CheckpointRecorder

        return CheckpointRecorder(Checkpoints(self.setup.workspace, lathe_home()), session)

    def _open_session(self):
        from lathe.home import lathe_home
        from lathe.session import ModelChangeEntry, SessionStore

        setup, options = self.setup, self.setup.options
        store = SessionStore(lathe_home())
        model = setup.model.name or setup.model.model_id
        if options.resume or options.continue_last:
            session = (
                store.open(options.resume) if options.resume else store.latest(setup.workspace)
            )
            if session is None:
                raise UsageError(
                    f"no earlier session in {setup.workspace} to continue; "
                    "start one without --continue"
                )
            self.cleanup.callback(session.close)
            session.close_dangling_tool_calls()
            last_model = next(
                (e.model for e in reversed(session.branch()) if isinstance(e, ModelChangeEntry)),
                session.header.model,
            )
            if last_model != model:
                session.append(ModelChangeEntry(provider=setup.model.provider, model=model))
            return session, session.conversation()
        session = store.create(setup.workspace, model)
        self.cleanup.callback(session.close)
        return session, []

    def record_interrupt(self) -> None:
        if self.observer is not None:
            self.observer.record_interrupt()
        if self.recorder is None:
            return
        from lathe.session import RunEndEntry

        self.recorder.session.append(
            RunEndEntry(
                status=RunStatus.INTERRUPTED.value, turns=0, reason="interrupted by the user"
            )
        )
