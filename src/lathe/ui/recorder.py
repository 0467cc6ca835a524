"""Recording a run into its session: every message as it enters the conversation,
compactions, and the run's end."""

from __future__ import annotations

import asyncio
import os
from collections.abc import Callable
from typing import TYPE_CHECKING

from lathe.errors import LatheError
from lathe.events import (
    AgentEvent,
    ChildEvent,
    ModelRequestFinished,
    RunFinished,
    RunStatus,
    TurnStarted,
    VerifyFinished,
    VerifyStarted,
)
from lathe.hooks.base import AgentHooks
from lathe.plural import some_of
from lathe.session import CheckpointEntry, CompactionEntry, MessageEntry, RunEndEntry, Session
from lathe.types import Message, Usage

if TYPE_CHECKING:
    from lathe.agent.budget import Spend
    from lathe.checkpoint import Checkpoint
    from lathe.obs import Redactor
    from lathe.ui.setup import RunSetup


class SessionRecorder(AgentHooks):
    def __init__(self, session: Session) -> None:
        self.session = session
        # Entry ids parallel to the agent's messages, so a compaction can name the first
        # message it keeps.
        self._ids = _conversation_ids(session)

    def on_message(self, message: Message) -> None:
        self._ids.append(self.session.append_message(message).id)

    def on_compaction(
        self, opening: str, kept_messages: int, tokens_before: int, tokens_after: int
    ) -> None:
        kept = self._ids[-kept_messages:] if kept_messages else []
        entry = self.session.append(
            CompactionEntry(
                summary=opening,
                first_kept=kept[0] if kept else "",
                tokens_before=tokens_before,
                tokens_after=tokens_after,
            )
        )
        self._ids = [entry.id, *kept]

    def record_end(self, finished: RunFinished) -> None:
        self.session.append(
            RunEndEntry(
                status=finished.status.value,
                turns=finished.turns,
                usage=finished.usage,
                reason=finished.reason,
            )
        )

    def record_interrupt(self, tally: RunTally, reason: str) -> None:
        """A run stopped before it could finish: the calls it cut off get their
        "interrupted" results, then its end with what it had spent."""
        self.session.close_dangling_tool_calls()
        self.session.append(
            RunEndEntry(
                status=RunStatus.INTERRUPTED.value,
                turns=tally.turns,
                usage=tally.total_usage,
                reason=reason,
            )
        )


def changes_note(checkpoints, session: Session) -> Message | None:
    """For a session that goes on: a note naming the files that changed since its
    conversation last left them (by the user, by `lathe undo`, or on another branch: a
    fork goes on from its branch point), or None. The model would otherwise go on from
    what it remembers of them."""
    from lathe.agent.finish import note

    left_at = next(
        (e.ref for e in reversed(session.branch()) if isinstance(e, CheckpointEntry)), None
    )
    changed = checkpoints.changed_since(session.id, left_at)
    if not changed:
        return None
    shown = some_of(changed, 20)
    return note(
        f"[Since this session last ran, these files changed in the workspace (edited by "
        f"the user, or put back by `lathe undo`): {shown}. Re-read them before editing.]"
    )


def files_before_conversation(checkpoints, session_id: Callable[[], str | None]):
    """For `AgentSettings.files_before_conversation`: the files the current session's
    turns changed, as they were before (`Checkpoints.before_session`); none without a
    checkpoint store or a session, or when the store cannot be read (which must not stop
    the work: the checkpoint recorder says so)."""

    def before(wanted: Callable[[str], bool]) -> dict[str, bytes | None]:
        current = session_id()
        if checkpoints is None or current is None:
            return {}
        try:
            return checkpoints.before_session(current, wanted)
        except LatheError:
            return {}

    return before


class RunTally:
    """The turns and usage of a run so far, from its events: what a run stopped before
    its `RunFinished` records. Call it with each event. `usage` is the run's own
    replies; `children_usage` its subagents' at any depth (their `ChildEvent`s), which
    a normal end counts as the run's (`ToolOutput.spent`) and a stopped one had left out."""

    def __init__(self) -> None:
        self.runs = 0  # resets so far: which run the figures are of
        self.reset()

    def reset(self) -> None:
        self.runs += 1
        self.turns = 0
        self.usage = Usage()
        self.cost_usd: float | None = 0.0  # None once a reply's cost was unknown
        self.children_usage = Usage()

    def __call__(self, event: AgentEvent) -> None:
        if isinstance(event, TurnStarted):
            self.turns = max(self.turns, event.turn)
        elif isinstance(event, ModelRequestFinished):
            self.usage = self.usage + event.usage
            if self.cost_usd is not None:
                self.cost_usd = None if event.cost_usd is None else self.cost_usd + event.cost_usd
        elif isinstance(event, ChildEvent):
            inner = event.event
            while isinstance(inner, ChildEvent):  # a grandchild's, wrapped once more
                inner = inner.event
            if isinstance(inner, ModelRequestFinished):
                self.children_usage = self.children_usage + inner.usage

    @property
    def total_usage(self) -> Usage:
        """What the run spent, its subagents' replies included: what its end records."""
        return self.usage + self.children_usage

    def spend(self) -> Spend:
        """What the run's own replies spent so far, as a budget counts it."""
        from lathe.agent.budget import Spend, tokens_of

        return Spend(tokens_of(self.usage), self.cost_usd)


def _conversation_ids(session: Session) -> list[str]:
    """The ids behind `session.conversation()`: the latest compaction (standing for its
    opening message) then the messages it kept, or every message when there was none;
    each call's results right after it, as there (`in_call_order`)."""
    from lathe.session.conversation import in_call_order

    branch = session.branch()
    latest = max((i for i, e in enumerate(branch) if isinstance(e, CompactionEntry)), default=None)
    opening: list[str] = []
    kept_from = 0
    if latest is not None:
        compaction = branch[latest]
        assert isinstance(compaction, CompactionEntry)
        opening = [compaction.id]
        kept_from = next(
            (i for i, e in enumerate(branch) if e.id == compaction.first_kept), latest + 1
        )
    kept = [e for e in branch[kept_from:] if isinstance(e, MessageEntry)]
    ids = {id(e.message): e.id for e in kept}
    return [*opening, *(ids[id(m)] for m in in_call_order([e.message for e in kept]))]


class CheckpointRecorder(AgentHooks):
    """Snapshots the workspace around every turn that may change files, so `lathe undo`
    covers edits and shell commands alike, and, given the run's events (`observe`),
    around the verify gate's checks. `changed` says whether a turn of this run changed
    a file, whichever tool did it."""

    def __init__(self, checkpoints, session: Session | None) -> None:
        self._checkpoints = checkpoints
        self._session = session
        self._before: Checkpoint | None = None
        self.changed = False

    async def before_changes(self, turn: int) -> None:
        session_id = self._session.id if self._session is not None else None
        self._before = await asyncio.to_thread(self._checkpoints.before_turn, turn, session_id)

    @property
    def unrecorded(self) -> tuple[str, ...]:
        """The nested repositories whose files the checkpoints of this run hold none of."""
        return self._checkpoints.unrecorded

    async def after_changes(self, turn: int) -> None:
        session_id = self._session.id if self._session is not None else None
        checkpoint = await asyncio.to_thread(self._checkpoints.after_turn, turn, session_id)
        # An unchanged workspace gives back the newest checkpoint, which may be an
        # "after" checkpoint of an earlier run's turn of the same number.
        if self._before is not None and checkpoint.commit == self._before.commit:
            return
        self.changed = True
        if self._session is not None:
            self._session.append(CheckpointEntry(ref=checkpoint.commit, turn=turn))

    def observe(self, event: AgentEvent) -> None:
        """Record around each check the verify gate runs (the baseline too): the state it
        starts from as found ("before": the user's edits since the last look stay
        theirs), and what it leaves as lathe's ("check"), so a run's start-over puts back
        what the code it ran wrote (attempt 1's code had overwritten a tracked file when
        the check imported it, and the start-over kept that as the user's). Not in a
        thread: the gate may write files right after the check (code it applied and puts
        back), which the snapshot must not take for the check's."""
        session_id = self._session.id if self._session is not None else None
        match event:
            case VerifyStarted(baseline=baseline):
                which = "baseline" if baseline else "verify"
                self._checkpoints.snapshot(f"before the {which} check", kind="before")
            case VerifyFinished(baseline=baseline):
                which = "baseline" if baseline else "verify"
                label = f"after the {which} check"
                self._checkpoints.snapshot(label, kind="check", session=session_id)


def record_run_start(
    session: Session,
    setup: RunSetup,
    *,
    approval: str | None = None,
    verify: str | None = "",
    redactor: Redactor | None = None,
) -> None:
    """The model and settings a run starts with (endpoint, approval mode, verify, turns),
    in its session when they are not what its last model change says already: whoever
    goes on with the session elsewhere (`lathe serve`'s resume) keeps them. `approval`
    and `verify` (None: no check): what is in effect when the face can change them
    (the app's /approval, /verify); left out, what `setup` gives. Masked by the run's
    `redactor` as every other entry (a verify command may name a key); left out, one
    made as a run makes it. The model is named so that the config resolves it again
    (`--model` takes the name recorded: `lathe run --continue`, the service's resume)."""
    from lathe.session.entries import ModelChangeEntry, last_model_change, run_settings

    if redactor is None:
        from lathe.obs import Redactor

        redactor = Redactor.for_run(setup.secrets(), os.environ)
    base_url, options = setup.loaded.config.base_url, setup.options
    settings = run_settings(
        base_url and str(base_url),
        approval or setup.approval,
        options.verify if verify == "" else verify,
        options.max_turns,
        redactor.mask,
    )
    model = setup.model
    if not model.name and not setup.loaded.config.base_url:
        # An unlisted id on a named provider (`--model ollama/llama3.1`): the id alone
        # names no model of the config (`resolve_model`'s rule 4 needs the provider).
        name = f"{model.provider}/{model.model_id}"
    else:  # a catalog or config name, or an id a base_url a layer set is sent as given
        name = model.name or model.model_id
    entry = ModelChangeEntry(provider=model.provider, model=name, settings=settings)
    entry = redactor.model(entry)
    last = last_model_change(session.branch())
    said = (last.provider, last.model, last.settings) if last else (None, None, None)
    if said != (entry.provider, entry.model, entry.settings):
        session.append(entry)
