"""One session the service runs: its own setup, agent, policy, sandbox, approver and
event journal; messages in, events out to whoever subscribes.

Everything here runs on the server's event loop. An event goes through the run's
`Observer` (masked, logged), is numbered in the session's `EventJournal`, then handed to
each subscriber's queue. A subscriber that falls too far behind is dropped (its stream
ends); it reconnects with `Last-Event-ID` and reads what it missed from the journal.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import AfterValidator, BaseModel, ConfigDict, Field

from lathe.events import (
    AgentEvent,
    AssistantReply,
    RunFinished,
    RunStarted,
    RunStatus,
    ToolFinished,
    ToolStarted,
    json_line,
)
from lathe.hooks.base import AgentHooks
from lathe.llm.base import has_surrogate
from lathe.service.approvals import RemoteApprover
from lathe.service.journal import EventJournal, journal_path
from lathe.service.limits import LimitedExecutor, LimitedProvider, ServerLimits
from lathe.types import Usage, UserMessage
from lathe.ui.recorder import RunTally

# What a run the server's death cut is ended with: its turns, usage and started calls.
_CUT_RUN_EVENTS = frozenset({"turn_started", "model_request", "tool_started",
                             "tool_finished"})  # fmt: skip
_SUBSCRIBER_BACKLOG = 10_000
QUEUE_SUFFIX = ".queued"
"""`<ts>_<id>.queued` beside the session file: the messages a session accepted and has
not run yet (a JSON list of strings), so a crash of the server cannot lose them."""

Status = Literal["idle", "running", "waiting_approval", "stopped"]


def usage_json(usage: Usage) -> dict[str, int]:
    """A session's or run's tokens as the API gives them: `total_tokens` counts every
    kind, cache reads included, as `--max-tokens` does and a run's end adds them up."""
    from lathe.agent.budget import tokens_of

    return {
        "input_tokens": usage.input_tokens,
        "output_tokens": usage.output_tokens,
        "cache_read_tokens": usage.cache_read_tokens,
        "cache_write_tokens": usage.cache_write_tokens,
        "total_tokens": tokens_of(usage),
    }


def _preview(text: str, limit: int = 200) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _refuse_surrogates(value: str) -> str:
    """JSON can spell half a character (`"\\ud800"`); such a string cannot be written
    as UTF-8, so the session record, journal or command it went into failed later."""
    if has_surrogate(value):
        raise ValueError("holds a lone surrogate (half of a \\uXXXX pair): send whole characters")
    return value


Text = Annotated[str, AfterValidator(_refuse_surrogates)]
"""A string of a request body: whole characters only."""
# The options a session is created or resumed with, constrained alike in both bodies.
Approval = Literal["read-only", "ask", "auto", "full"]
Verify = Annotated[Text, Field(pattern=r"\S")]  # blank would run as a check that passes
Turns = Annotated[int, Field(gt=0)]
Seconds = Annotated[float, Field(gt=0, allow_inf_nan=False)]


class SessionOptions(BaseModel):
    """What a client may choose for a session (`POST /v1/sessions`); unset ones come
    from the workspace's config layers, as for `lathe run`."""

    model_config = ConfigDict(extra="forbid")

    workspace: Text = Field(description="The directory the session works in.")
    model: Text | None = Field(default=None, description="A model name or id (like --model).")
    base_url: Text | None = Field(default=None, description="An OpenAI-compatible endpoint.")
    approval: Approval | None = Field(
        default=None, description="The approval mode (default: the config's, else auto)."
    )
    verify: Verify | None = Field(default=None, description="The command that proves the work.")
    max_turns: Turns | None = Field(default=None, description="Model turns per message.")
    approval_timeout_s: Seconds | None = Field(
        default=None,
        description="An unattended session: deny an approval nobody answers in this time.",
    )


class SessionRecord(SessionOptions):
    """What the service keeps of a session it runs (its registry file): the options it
    was created with, the session file, and when."""

    id: str
    session_path: str
    created: str = Field(default_factory=lambda: datetime.now(UTC).isoformat())


_LAGGED = "lagged"  # a subscriber's last item: it fell behind; read the journal


@dataclass(eq=False)  # each one is itself, in a set
class _Subscriber:
    queue: asyncio.Queue[tuple[int, str] | str | None] = field(
        default_factory=lambda: asyncio.Queue(_SUBSCRIBER_BACKLOG)
    )

    def lagged(self) -> None:
        """It fell behind: every live event still queued gives way to `_LAGGED`, which
        sends it to the journal, where they all are."""
        while not self.queue.empty():
            self.queue.get_nowait()
        self.queue.put_nowait(_LAGGED)

    def stop(self) -> None:
        """The session stopped: after what is queued, nothing more."""
        try:
            self.queue.put_nowait(None)
        except asyncio.QueueFull:
            self.lagged()  # the journal has the rest; then it ends


class _OnUserMessage(AgentHooks):
    """A recorder's neighbour: calls `then` once a user message is in the session."""

    def __init__(self, then: Any) -> None:
        self._then = then

    def on_message(self, message: Any) -> None:
        if isinstance(message, UserMessage):
            self._then()


class ServedSession:
    """One session the service runs (see the module doc). `post` starts or queues a
    run, `answer` answers an approval, `abort` stops the run, `events` streams what it
    did and does, `close` ends serving it; all on the server's loop."""

    def __init__(self, record: SessionRecord, session: Any, limits: ServerLimits) -> None:
        self.record = record
        self.session = session
        self.limits = limits
        self.id: str = session.id
        self.stopped = False
        self.last_run: dict[str, Any] | None = _last_run(session)  # a restart keeps it
        self.usage = Usage()
        self.run_tally = RunTally()
        self.cost_usd: float | None = 0.0
        self.journal = EventJournal(journal_path(Path(session.path)))
        self._subscribers: set[_Subscriber] = set()
        self._messages: list[str] = []  # accepted, not yet run; kept in `_queue_file` too
        # Queued messages the current run took as its task: in `_queue_file` until the
        # session has the task (`_task_recorded`), so neither a crash nor a refused
        # start loses them.
        self._taken: list[str] = []
        self._queue_file = Path(session.path).with_suffix(QUEUE_SUFFIX)
        self._task: asyncio.Task[None] | None = None
        self._closers: list[Any] = []
        self._stop_reason = ""
        self._announced: set[str] = set()  # calls the stream saw start and not end

    # building

    async def start(self) -> None:
        """Build the session's run: config layers of its workspace, provider, sandbox,
        gate with the remote approver, hooks and agent. Raises UsageError for options
        the config cannot honour (no such model, a workspace that does not exist)."""
        from lathe.home import lathe_home
        from lathe.llm.registry import make_provider
        from lathe.obs import Observer, Redactor
        from lathe.ui.setup import RunOptions, prepare

        record = self.record
        left = _read_queue(self._queue_file)  # messages accepted before a crash
        options = RunOptions(
            workspace=Path(record.workspace),
            model=record.model,
            base_url=record.base_url,
            approval=record.approval,
            # A record made before a blank verify was refused: blank meant no check.
            verify=(record.verify or "").strip() or None,
            max_turns=record.max_turns,
        )
        self.setup = setup = await asyncio.to_thread(prepare, options)
        self.redactor = redactor = Redactor.for_run(setup.secrets(), os.environ)
        self.observer = Observer(Path(self.session.path), self.id, redactor, self._publish)
        self._closers.append(self.observer.close)
        endpoint = setup.endpoint
        slots = self.limits.model_calls(endpoint.kind, endpoint.base_url or "")
        provider = LimitedProvider(make_provider(endpoint), slots, self.emit)
        self.provider = redactor.provider(provider)
        self.approver = RemoteApprover(
            self.session, self.emit, redactor.event, timeout_s=record.approval_timeout_s
        )
        if self._restore_approvals() and record.approval_timeout_s is not None:
            # Unattended: what a restart left pending waits its time again, no longer.
            asyncio.get_running_loop().call_later(record.approval_timeout_s, self._expire)
        self.safety = await self._safety(lathe_home())
        cut = await asyncio.to_thread(self.journal.unfinished_run, _CUT_RUN_EVENTS)
        if cut is not None and _ended_after(self.session, self.journal.path):
            cut = None  # the session went on elsewhere (`lathe --resume`), and ended
        self.agent = self._agent(self._history(cut_run=cut is not None))
        if cut is not None:
            self._end_cut_run(cut)
        left = self._not_delivered(left)
        if left:  # the server died before they ran
            self._keep_unrun(left)
        else:  # none, or only those the session has already
            self._keep_queue([])
        self._count_earlier_runs()

    def _restore_approvals(self) -> bool:
        from lathe.agent.context import unanswered_calls
        from lathe.session import apply_compaction

        open_calls = {c.id for c in unanswered_calls(apply_compaction(self.session.branch()))}
        return bool(self.approver.restore(open_calls))

    def _count_earlier_runs(self) -> None:
        """What the session's earlier runs spent, so its totals survive a restart."""
        from lathe.session import RunEndEntry

        for entry in self.session.branch():
            if isinstance(entry, RunEndEntry):
                self.usage = self.usage + entry.usage
        model = self.setup.model
        self.cost_usd = model.cost(self.usage) if model.prices.known else None

    def _expire(self) -> None:
        wait = self.record.approval_timeout_s
        why = f"nobody answered within {wait:g} s (an unattended session)"
        denied = not self.stopped and self.approver.deny_restored(why, by="timeout")
        if denied and not self.running:
            self._task = asyncio.create_task(self._drive(None))

    async def _safety(self, home: Path) -> Any:
        from lathe.checkpoint import Checkpoints
        from lathe.ui.children import LocalChildren
        from lathe.ui.recorder import CheckpointRecorder, SessionRecorder
        from lathe.ui.safety import build_safety, hook_chain

        safety = build_safety(self.setup, self.session, approver=self.approver, emit=self.emit)
        workspace = self.setup.workspace
        self.approver.diff_of = lambda request: _diff_of(safety.tools, request, workspace)
        safety.executor = LimitedExecutor(safety.executor, self.limits.commands, self.emit)
        checkpoints = self._checkpoints = Checkpoints(self.setup.workspace, home)
        self.recorder = SessionRecorder(self.session)
        changes = CheckpointRecorder(checkpoints, self.session)
        delivered = _OnUserMessage(self._task_recorded)
        self.chain = hook_chain(
            safety, self.redactor, recorders=[self.recorder, changes, delivered]
        )
        limits = self.limits
        LocalChildren(
            self.setup, self.provider, self.redactor, self.emit,
            parent_session_id=self.id, checkpoints=checkpoints, home=home,
            wrap_executor=lambda inner: LimitedExecutor(inner, limits.commands, self.emit),
            wrap_provider=lambda inner, endpoint: LimitedProvider(
                inner, limits.model_calls(endpoint.kind, endpoint.base_url or ""), self.emit
            ),
            run_tally=self.run_tally,
        ).register(safety.tools)  # fmt: skip
        return safety

    def _history(self, *, cut_run: bool) -> list[Any]:
        """The conversation to go on from, each call's results right after it (a message
        queued when the server stopped while an approval held a call open comes before
        the call's result in the file; a strict API refuses that). A call paused on an
        approval keeps no result (answering the approval runs it); the calls of a run the
        server's death cut are answered as it ends (`_end_cut_run`); any other call a
        crash left open (a `lathe run` killed) gets an "interrupted" one."""
        if self.approver.pending or cut_run:
            return self.session.conversation(open_tail=True)
        self.session.close_dangling_tool_calls()
        return self.session.conversation()

    def _end_cut_run(self, events: list[str]) -> None:
        """End the run the server's death cut (the journal has its start and no end) as
        a stopped run ends, so a client following the stream sees it end and `last_run`
        says how: its open calls get "interrupted" results in the conversation and the
        stream — a call paused on an approval stays open for it, as after SIGTERM — and
        the run a `run_finished` and a run end in the session, with the turns and usage
        its `events` (those of `_CUT_RUN_EVENTS`) show."""
        from lathe.events import event_adapter

        adapter = event_adapter()
        for wire in events:
            with contextlib.suppress(ValueError):  # one an older lathe wrote: not counted
                event = adapter.validate_json(wire)
                self.run_tally(event)
                if isinstance(event, ToolStarted):
                    self._announced.add(event.call_id)
                elif isinstance(event, ToolFinished):
                    self._announced.discard(event.call_id)
        self._record_interruption("the server stopped (killed or crashed) during the run")

    def _agent(self, history: list[Any]) -> Any:
        from lathe.ui.recorder import files_before_conversation
        from lathe.ui.wiring import build_agent

        agent = build_agent(
            self.setup,
            self.provider,
            self.emit,
            executor=self.safety.executor,
            hooks=self.chain,
            messages=history,
            tools=self.safety.tools,
        )
        agent.deps.settings.files_before_conversation = files_before_conversation(
            self._checkpoints, lambda: self.id
        )
        return agent

    # events

    def emit(self, event: AgentEvent) -> None:
        self.observer(event)

    def _publish(self, event: AgentEvent) -> None:
        """The observer's face: number the (masked) event, keep it, hand it out."""
        self.run_tally(event)
        if isinstance(event, AssistantReply):
            self.usage = self.usage + event.message.usage
            if self.cost_usd is not None:
                prices = self.setup.model
                self.cost_usd = (
                    self.cost_usd + prices.cost(event.message.usage)
                    if prices.prices.known
                    else None
                )
        elif isinstance(event, RunFinished):
            self.last_run = {"status": event.status.value, "reason": event.reason,
                             "turns": event.turns}  # fmt: skip
        elif isinstance(event, ToolStarted):
            self._announced.add(event.call_id)
        elif isinstance(event, ToolFinished):
            self._announced.discard(event.call_id)
        wire = json_line(event)
        number = self.journal.append(wire)
        for subscriber in list(self._subscribers):
            try:
                subscriber.queue.put_nowait((number, wire))
            except asyncio.QueueFull:  # it catches up from the journal (see `events`)
                self._subscribers.discard(subscriber)
                subscriber.lagged()

    async def events(self, after: int, *, follow: bool = True):
        """(id, event JSON) after `after`, each once and in order: those in the journal,
        then, with `follow`, the live ones until the session stops. A reader more than
        10,000 live events behind goes back to the journal for what it missed, then
        follows again: a burst costs it a file read, never its connection."""
        sent = after
        while True:
            subscriber = _Subscriber()
            if follow and not self.stopped:
                self._subscribers.add(subscriber)  # before the file: nothing falls between
            try:
                while page := await asyncio.to_thread(self.journal.page, sent):
                    for number, wire in page:
                        sent = number
                        yield number, wire
                if not follow or (self.stopped and subscriber.queue.empty()):
                    return
                while (item := await subscriber.queue.get()) is not _LAGGED:
                    if item is None:
                        return
                    number, wire = item
                    if number > sent:
                        sent = number
                        yield number, wire
            finally:
                self._subscribers.discard(subscriber)

    # state

    @property
    def running(self) -> bool:
        return self._task is not None and not self._task.done()

    @property
    def status(self) -> Status:
        if self.stopped:
            return "stopped"
        if self.approver.pending:
            return "waiting_approval"
        return "running" if self.running else "idle"

    def summary(self) -> dict[str, Any]:
        record = self.record
        return {
            "id": self.id,
            "status": self.status,
            "workspace": str(self.setup.workspace),
            "model": self.setup.model.model_id,
            "base_url": self.setup.model.shown_url,  # where its requests go, masked
            "approval": self.setup.approval,
            "verify": record.verify,
            "created": record.created,
            "last_run": self.last_run,
            "queued_messages": len(self._messages),
            "pending_approvals": len(self.approver.pending),
            "usage": usage_json(self.usage),
            "cost_usd": self.cost_usd,
            "last_event_id": self.journal.last_id,
        }

    # work

    def post(self, text: str) -> bool:
        """Send a message: it starts a run now, or after the current one (True: queued).
        A queued message is on disk before it is accepted, so a crash cannot lose it.
        Messages still queued (a busy workspace refused their run) go with this one."""
        if self.running or self.approver.paused or self._messages:
            self._keep_queue([*self._taken, *self._messages, text])
            self._messages.append(text)
            if self.running or self.approver.paused:
                return True
        self.approver.forget_kept()
        self._task = asyncio.create_task(self._drive(self._take() if self._messages else text))
        return False

    def answer(self, approval_id: str, choice: Any, reason: str = "") -> None:
        """Answer a pending approval (UnknownApproval for an id not pending). One a
        restart left paused runs the paused call, then the run goes on."""
        waited = self.approver.answer(approval_id, choice, reason)
        if not waited and not self.approver.paused and not self.running:
            self._task = asyncio.create_task(self._drive(None))

    async def abort(self, reason: str = "stopped through the service") -> bool:
        """Stop the current run, or the one a restart left paused on approvals, and
        drop the messages queued so far; whether there was one. `reason` is recorded as
        the run's end. A message sent while the run stops runs after it."""
        self._messages.clear()
        if not self.approver.closing:  # closing keeps them (`close`)
            self._taken = []  # the stopped run's task goes with the queue
            self._keep_queue([])
        task = self._task
        if task is None or task.done():
            # Closing (SIGTERM, DELETE): a call a restart left paused stays pending in
            # the file, for the next server or resume to ask again.
            if (
                self.stopped
                or self.approver.closing
                or not self.approver.deny_restored("the run was aborted")
            ):
                return False
            self._record_interruption()
            return True
        self._stop_reason = reason
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task
        if self._messages and not self.stopped:
            self._task = asyncio.create_task(self._drive(self._take()))
        return True

    async def _drive(self, text: str | None) -> None:
        """Runs until no message waits. `text` None: go on with the calls a restart
        left paused (their approvals are answered now)."""
        while True:
            await self._run(text)
            if self._taken:  # refused before the session had them: they stay queued
                self._messages[:0] = self._taken
                self._taken = []
                return  # the next message sends them; a busy workspace would refuse again
            if not self._messages or self.stopped:
                return
            text = self._take()

    def _take(self) -> str:
        """The queued messages as the next run's task; they stay on disk, as `_taken`,
        until the session has it."""
        self._taken, self._messages = self._messages, []
        return "\n\n".join(self._taken)

    def _task_recorded(self) -> None:
        """A user message is in the session: the first after a run took queued messages
        is its task, so their file now keeps only those queued since."""
        if self._taken:
            self._taken = []
            # A file left behind is harmless: a restart finds its text in the session.
            with contextlib.suppress(OSError):
                self._keep_queue(self._messages)

    async def _run(self, text: str | None) -> None:
        from lathe.ui.recorder import record_run_start
        from lathe.workspace_lock import hold_workspace

        setup = self.setup
        task = text if text is not None else self.agent.deps.words.say("continue_task")
        self.run_tally.reset()
        self.emit(RunStarted(task=task, model=setup.model.model_id,
                             workspace=str(setup.workspace), session_id=self.id,
                             origin="user" if text is not None else "lathe"))  # fmt: skip
        try:
            with contextlib.ExitStack() as held:
                if setup.approval != "read-only":
                    held.enter_context(
                        hold_workspace(
                            setup.workspace,
                            doing=f"lathe serve session {self.id}",  # which, for a refusal
                            when_busy=(
                                "your queued message is kept and goes with the next one"
                                if self._taken
                                else "then send the message again"
                            ),
                        )
                    )
                # What it starts with, for a resume with no record here (a run_task's).
                record_run_start(self.session, setup, redactor=self.redactor)
                await self._run_paused_calls()
                finished = self.redactor.event(await self.agent.run(task))
        except asyncio.CancelledError:
            self._record_interruption()
            raise
        except Exception as exc:  # the session outlives a failing run; say what failed
            self._close_open_calls("not run: the run failed before this call ran")
            status = RunStatus.PROVIDER_ERROR if _is_provider(exc) else RunStatus.FAILED
            finished = self.redactor.event(
                RunFinished(
                    status=status,
                    turns=0,
                    usage=Usage(),
                    answer="",
                    reason=f"the run failed: {exc}",
                )
            )
            self.emit(finished)
        self.recorder.record_end(finished)

    async def _run_paused_calls(self) -> None:
        """Run the calls of the last reply that have no result, before anything else
        is sent: those a restart left paused (the gate finds the answers kept for them)
        and any a failed run left open."""
        from lathe.agent.context import unanswered_calls
        from lathe.agent.tooling import ToolRunner, result_message

        calls = unanswered_calls(self.agent.messages)
        if not calls:
            return
        runner = ToolRunner(self.agent.deps, self.emit)
        records = await runner.run_calls(0, calls)
        self._answer_calls([result_message(record.call, record.output) for record in records])

    def _record_interruption(self, reason: str = "") -> None:
        """A stopped run leaves a whole conversation: each open call an "interrupted"
        result — except a call whose approval stays pending, for the next start (the
        server shuts down) or the answer (a restart found it) — and the run's end in the
        session and the stream, with `reason`, else the abort's."""
        from lathe.session import INTERRUPTED_RESULT

        self._close_open_calls(INTERRUPTED_RESULT)
        finished = RunFinished(
            status=RunStatus.INTERRUPTED, turns=self.run_tally.turns,
            usage=self.run_tally.total_usage, answer="",
            reason=reason or self._stop_reason or "stopped",
        )  # fmt: skip
        self.emit(finished)
        self.recorder.record_end(finished)

    def _close_open_calls(self, text: str) -> None:
        """Each call of the last reply still unanswered gets `text` as its result, in
        the conversation and in the stream (a `tool_finished`, after a `tool_started`
        when the stream has not seen it start). A call whose approval is still pending
        keeps waiting for it: only a shutdown or a restart leaves one pending here (a
        stopped run's requests are denied as it stops)."""
        from lathe.agent.context import unanswered_calls
        from lathe.agent.tooling import refused_results

        waiting = {p.call_id for p in self.approver.pending.values()}
        results: list[Any] = []
        for call in unanswered_calls(self.agent.messages):
            if call.id in waiting:
                continue
            seen = call.id in self._announced
            summary = text.partition(":")[0]
            results += refused_results([call], text, summary, self.emit, started=seen)
        self._answer_calls(results)

    def _keep_queue(self, messages: list[str]) -> None:
        """Write the queued `messages` beside the session file (0600: they are the
        person's words), or remove the file when there are none."""
        from lathe.atomic_write import write_atomic

        if messages:
            write_atomic(self._queue_file, json.dumps(messages).encode(), mode=0o600)
        else:
            self._queue_file.unlink(missing_ok=True)

    def _not_delivered(self, queued: list[str]) -> list[str]:
        """The `queued` messages a restart found, less those the session already has:
        the server died after it recorded them (a run's task, or `_keep_unrun`'s) and
        before it removed their file. They are the first ones, the session's last user
        message joined (as a run or `_keep_unrun` joins them), masked as recorded."""
        last = next(
            (m.content for m in reversed(self.agent.messages) if isinstance(m, UserMessage)),
            None,
        )
        for n in range(1, len(queued) + 1):
            if self.redactor.mask("\n\n".join(queued[:n])) == last:
                return queued[n:]
        return queued

    def _keep_unrun(self, messages: list[str]) -> None:
        """Queued messages the server stopped (or died) before running: the person's
        words stay in the conversation, where the next run reads them, and the stream
        says so; then they are no longer queued."""
        from lathe.events import Notice

        queued = "\n\n".join(messages)
        self.agent.append(UserMessage(content=queued))
        self.emit(
            Notice(
                level="warning",
                message="the server stopped before your queued message ran; it is kept in "
                f"the conversation and the model reads it with your next message: "
                f"{_preview(queued)}",
            )
        )
        self._keep_queue([])

    def _answer_calls(self, results: list[Any]) -> None:
        """Record the results of the last reply's calls, right after that reply: a
        message kept since (queued when the server stopped while an approval held a
        call open) goes after them, as a strict API requires (`in_call_order`)."""
        from lathe.session.conversation import in_call_order

        for result in results:
            self.agent.append(result)
        if results:
            self.agent.messages[:] = in_call_order(self.agent.messages)

    async def close(self) -> None:
        """Stop the run and release the session (its file stays). A pending approval
        stays pending in the file: the next server (or resume) asks it again; messages
        still queued are kept in it as the person's, unanswered. Also after
        a `start` that failed part way: what it built is closed, nothing more."""
        if hasattr(self, "approver"):  # built: there may be a run to stop
            self.approver.closing = True
            queued = list(self._messages)
            await self.abort("the server stopped, or stopped serving this session")
            queued[:0], self._taken = self._taken, []  # a task the session did not get
            if queued:
                self._keep_unrun(queued)
        self.stopped = True
        for subscriber in list(self._subscribers):
            subscriber.stop()
        self._subscribers.clear()
        with contextlib.suppress(Exception):  # AttributeError: a start that failed
            await self.safety.aclose()
        with contextlib.suppress(Exception):
            await self.provider.aclose()
        for close in self._closers:
            close()
        self.journal.close()
        self.session.close()


def _read_queue(path: Path) -> list[str]:
    """The messages a queue file keeps (none without one). One that cannot be read is
    a UsageError, not messages silently dropped: the session is then not served."""
    from lathe.errors import UsageError

    try:
        kept = json.loads(path.read_bytes())
    except FileNotFoundError:
        return []
    except (OSError, ValueError) as exc:
        problem = str(exc)
    else:
        if isinstance(kept, list) and all(isinstance(m, str) for m in kept):
            return kept
        problem = "not a list of messages"
    raise UsageError(
        f"cannot read the queued messages in {path} ({problem}); move the file aside to "
        "serve the session without them"
    )


def _diff_of(tools: Any, request: Any, workspace: Path) -> str | None:
    tool = tools.get(request.tool)
    return tool.preview_change(request.arguments, workspace) if tool else None


def _is_provider(exc: Exception) -> bool:
    from lathe.errors import ProviderError

    return isinstance(exc, ProviderError)


def _last_run(session: Any) -> dict[str, Any] | None:
    """How the session's latest run ended, from its file: what a restarted server shows
    until the next run ends."""
    from lathe.session import RunEndEntry

    for entry in reversed(session.branch()):
        if isinstance(entry, RunEndEntry):
            return {"status": entry.status, "reason": entry.reason, "turns": entry.turns}
    return None


def _ended_after(session: Any, journal: Path) -> bool:
    """Whether a run ended in `session` after the server last wrote to its `journal`:
    the run the journal saw cut was gone on with and ended elsewhere (`lathe -C WS
    --resume ID`, which writes no journal). Timed, as nothing else ties the two files: a
    run that went on from an answered approval has no message of its own before it."""
    from lathe.session import RunEndEntry

    ended = next((e for e in reversed(session.branch()) if isinstance(e, RunEndEntry)), None)
    try:
        return ended is not None and ended.ts.timestamp() > os.stat(journal).st_mtime
    except OSError:
        return False
