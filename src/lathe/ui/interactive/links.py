"""The interactive face's ties to the session store and the checkpoint store.

The session is opened (or created) at start, like `lathe run` does, and recorded by the
shared `lathe.ui.recorder.SessionRecorder`; a session that got no entry is removed when
it is left, so opening lathe and quitting leaves nothing behind. Checkpoints are
optional at import time: without `lathe.checkpoint`, /undo and /checkpoints say so.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from lathe.errors import LatheError, UsageError
from lathe.events import RunFinished
from lathe.home import lathe_home
from lathe.hooks.base import AgentHooks
from lathe.plural import plural
from lathe.types import AssistantMessage, Message, UserMessage

if TYPE_CHECKING:
    from lathe.checkpoint import RestoreReport
    from lathe.ui.interactive.app import InteractiveApp
    from lathe.ui.recorder import RunTally
    from lathe.ui.setup import Continued

_NO_CHECKPOINTS = (
    "checkpoints are not available in this build of lathe (lathe.checkpoint is missing)"
)


class Links(AgentHooks):
    """Records the conversation into the current session and snapshots the workspace
    around turns that may change files, each such turn's checkpoint an entry of the
    session too (through the shared `SessionRecorder` and `CheckpointRecorder`, as
    `lathe run` does). One of the agent's hooks; the session can be swapped (/clear,
    /resume, /fork)."""

    def __init__(self, workspace: Path, model: str, provider: str) -> None:
        from lathe.session import SessionStore

        self.workspace = workspace
        self.model = model
        self.provider = provider
        self.store = SessionStore(lathe_home())
        self.session: Any = None
        self.recorder: Any = None
        self.changes: Any = None  # the session's `CheckpointRecorder`
        # lathe's notes for the model (an /undo's), which enter the conversation with
        # the next message: appended now, a session left before it would end on them,
        # listed as unfinished. One left unsent is not lost: a session that goes on is
        # told the files that changed since (`changes_note`).
        self.notes: list[Message] = []
        try:
            from lathe.checkpoint import Checkpoints

            self.checkpoints: Any = Checkpoints(workspace, lathe_home())
        except ImportError:
            self.checkpoints = None
        self.checkpoint_error = ""

    # hooks

    def on_message(self, message: Message) -> None:
        if self.recorder is not None:
            self.recorder.on_message(message)

    def on_compaction(self, *args: Any) -> None:
        if self.recorder is not None:
            self.recorder.on_compaction(*args)

    async def before_changes(self, turn: int) -> None:
        if self.changes is not None:
            await self._snapshot(self.changes.before_changes(turn))

    async def after_changes(self, turn: int) -> None:
        if self.changes is not None:
            await self._snapshot(self.changes.after_changes(turn))

    async def _snapshot(self, snapshot: Awaitable[None]) -> None:
        try:
            await snapshot
        except LatheError as exc:  # a broken checkpoint store must not stop the work
            self.checkpoint_error = str(exc)

    def observe(self, event: Any) -> None:
        if isinstance(event, RunFinished) and self.recorder is not None:
            self.recorder.record_end(event)

    def record_interruption(self, tally: RunTally, reason: str) -> None:
        if self.recorder is not None:
            self.recorder.record_interrupt(tally, reason)

    def remember_approval(self, key: str) -> None:
        from lathe.session import ApprovalEntry

        if self.session is not None:
            self.session.append(ApprovalEntry(rule=key, decision="allow"))

    def revoke_approval(self, key: str) -> None:
        """Record that `key` is no longer allowed always, so a resume asks again too."""
        from lathe.session import ApprovalEntry

        if self.session is not None:
            self.session.append(ApprovalEntry(rule=key, decision="revoke"))

    def remembered_approvals(self) -> set[str]:
        from lathe.ui.safety import standing_approvals

        return standing_approvals(self.session)

    def record_model_change(self, provider: str, model: str) -> None:
        from lathe.session import ModelChangeEntry

        self.model, self.provider = model, provider
        if self.session is not None:
            self.session.append(ModelChangeEntry(provider=provider, model=model))

    async def close(self) -> None:
        self._drop(self.session)
        self.session = self.recorder = self.changes = None

    def _drop(self, session: Any) -> None:
        """Close a session; one that never got an entry is removed, so opening lathe
        and leaving at once leaves nothing behind."""
        if session is not None:
            session.close_or_discard()

    # opening sessions

    def open_at_start(
        self, resume: str | None, continue_last: bool, continued: Continued | None = None
    ) -> list[Message]:
        """Open the session to work in: the one asked for, or a new one. Returns the
        conversation to continue (empty for a new session). `continued`: the session
        `prepare` settled on for `resume` or `continue_last` (`setup.continued`), whose
        settings the app took, opened by its id: looked up again, the latest could be
        another session another lathe wrote to meanwhile, gone on with under the first
        one's model, endpoint and approval."""
        if continued is not None:
            session = self.store.open(continued.session_id)
            _in_workspace(session, self.workspace)
            return self._adopt(session)
        if resume or continue_last:
            session = self.store.open(resume) if resume else self.store.latest(self.workspace)
            if session is not None:
                _in_workspace(session, self.workspace)
                return self._adopt(session)
        self._adopt(self.store.create(self.workspace, self.model))
        return []

    def _adopt(self, session: Any) -> list[Message]:
        from lathe.session import ModelChangeEntry
        from lathe.ui.recorder import CheckpointRecorder, SessionRecorder, changes_note

        self.session, self.notes = session, []  # it gets a note of its own
        if session.entries:
            session.close_dangling_tool_calls()
            if session.header.model != self.model:
                session.append(ModelChangeEntry(provider=self.provider, model=self.model))
        self.recorder = SessionRecorder(session)
        if self.checkpoints is not None:
            self.changes = CheckpointRecorder(self.checkpoints, session)
        conversation = session.conversation()
        if session.entries and self.checkpoints is not None:
            try:
                told = changes_note(self.checkpoints, session)
            except LatheError:  # a store that fails says so at the first turn
                told = None
            if told is not None:
                self.recorder.on_message(told)
                conversation.append(told)
        return conversation

    def _switch(self, app: InteractiveApp, session: Any) -> None:
        self._drop(self.session)
        app.agent.messages[:] = self._adopt(session)
        from lathe.ui.interactive.app import context_tokens

        app.status.last_prompt_tokens = context_tokens(app.agent.messages)
        app.gate.remembered = self.remembered_approvals()
        for warning in session.warnings:
            app.renderer.note(f"session: {warning}", "yellow")
        app.renderer.note(f"session {session.id} · {len(app.agent.messages)} messages", "green")
        show_last_exchanges(app, session.messages())

    # commands

    async def list_sessions(self, app: InteractiveApp) -> None:
        summaries = self.store.list(self.workspace)
        if not summaries:
            app.renderer.note("no sessions in this workspace yet")
            return
        current = self.session.id if self.session is not None else None
        for summary in summaries[:20]:
            mark = "*" if summary.id == current else " "
            title = summary.title or "(no message)"
            app.renderer.note(
                f"{mark} {summary.id}  {summary.updated:%Y-%m-%d %H:%M}  "
                f"{plural(summary.turns, 'turn'):>9}"
                f"  {summary.status:<10}  {title[:50]}",
                "",
            )
        app.renderer.note("/resume ID continues one; a unique prefix of the id is enough")

    async def show_subagents(self, app: InteractiveApp, child_id: str | None) -> None:
        """The subagents this session started, or the transcript of one of them."""
        current = self.session.id if self.session is not None else None
        children = [
            s
            for s in self.store.list(self.workspace)
            if current and s.parent_session == current and s.parent_call
        ]
        if child_id is None:
            if not children:
                app.renderer.note("no subagent has run in this session")
                return
            for summary in children:
                app.renderer.note(
                    f"  {summary.id}  {summary.status:<10}  {plural(summary.turns, 'turn'):>9}  "
                    f"{(summary.title or '')[:60]}",
                    "",
                )
            app.renderer.note("/agents ID shows one's transcript; a unique prefix is enough")
            return
        chosen = [s for s in children if s.id.startswith(child_id)]
        if len(chosen) != 1:
            app.renderer.note(
                f"no single subagent of this session starts with {child_id!r}; /agents lists them",
                "yellow",
            )
            return
        from lathe.session.transcript import render_text

        child = await asyncio.to_thread(self.store.open, chosen[0].id, readonly=True)
        app.renderer.note(render_text(child), "")

    async def resume(self, app: InteractiveApp, session_id: str | None) -> None:
        if session_id is None:
            current = self.session.id if self.session is not None else None
            listed = self.store.list(self.workspace)
            others = [s for s in listed if s.id != current and s.worked_in]
            # The newest one this lathe can open: one another lathe holds would refuse.
            free = [s for s in others if s.status != "running"]
            if not free:
                busy = " that no other lathe has open" if others else ""
                app.renderer.note(f"no other session in this workspace to resume{busy}")
                return
            session_id = free[0].id
        try:
            if self.session is not None and self.store.full_id(session_id) == self.session.id:
                app.renderer.note(f"you are in session {self.session.id} already")
                return
            session = self.store.open(session_id)
            _in_workspace(session, self.workspace)
        except LatheError as exc:
            app.renderer.error(str(exc))
            return
        self._switch(app, session)

    async def fork(self, app: InteractiveApp) -> None:
        if self.session is None or not self.session.entries:
            app.renderer.note("nothing to fork yet: this conversation has no messages")
            return
        old = self.session.id
        forked = self.store.fork(old)
        self._drop(self.session)
        app.agent.messages[:] = self._adopt(forked)  # with the note it may have got
        app.gate.remembered = self.remembered_approvals()
        app.renderer.note(f"forked session {old} into {forked.id}; continuing in the fork", "green")

    async def clear(self, app: InteractiveApp) -> None:
        self._drop(self.session)
        self._adopt(self.store.create(self.workspace, self.model))
        app.gate.remembered = set()

    async def undo(self, app: InteractiveApp) -> None:
        if self.checkpoints is None:
            app.renderer.error(_NO_CHECKPOINTS)
            return
        try:
            with app.workspace_lock():  # not under another lathe run's edits
                await asyncio.to_thread(self._refuse_another_live_sessions_turn)
                report = await asyncio.to_thread(self.checkpoints.undo)
            what = await asyncio.to_thread(self._undone, report)
        except LatheError as exc:
            app.renderer.error(str(exc))
            return
        changed = report.restored + report.recreated + report.deleted + report.modes
        if report.changed:
            app.renderer.note(f"undone: {what}", "green")
            for label, paths in (
                ("restored", report.restored),
                ("recreated", report.recreated),
                ("deleted", report.deleted),
                ("mode restored", report.modes),
            ):
                if paths:
                    app.renderer.note(f"  {label}: {_names(paths)}", "")
        else:
            app.renderer.note("undo: no file needed to change")
        if report.kept:
            app.renderer.note(
                f"  kept (you changed them since): {_names(report.kept)}; "
                "`lathe undo --force` overwrites them",
                "yellow",
            )
        if report.held and report.result is not None:  # as `lathe undo` says it
            n = report.target.n
            app.renderer.note(
                f"  not overwritten (what they held was ignored, in no checkpoint): "
                f"{_names(report.held)}; `lathe checkpoints restore {n}` writes back what "
                f"checkpoint #{n} holds",
                "yellow",
            )
        if changed:
            from lathe.agent.finish import note

            self.notes.append(
                note(
                    "[The user undid the last change to the workspace with /undo; "
                    f"these files were reverted: {', '.join(changed)}. Re-read files before "
                    "editing them.]"
                )
            )

    def _undone(self, report: RestoreReport) -> str:
        if report.undid is None:
            return report.target.label and "back to " + report.target.label
        from lathe.ui.checkpoints_cmd import undone_operation

        return undone_operation(report.undid)

    def take_notes(self) -> list[Message]:
        """lathe's notes waiting for the next message (see `notes`); none wait after."""
        taken, self.notes = self.notes, []
        return taken

    def _refuse_another_live_sessions_turn(self) -> None:
        """UsageError when the turn an undo would revert is another session's, and that
        session is open in another lathe: its model would not learn its files went back.
        A finished session's turn may be undone here (`lathe run`, then /undo)."""
        from lathe.session.lock import is_locked

        operation = self.checkpoints.next_undo()
        mine = self.session.id if self.session is not None else None
        if operation is None or operation.session in (None, mine):
            return
        try:
            other = self.store.find(operation.session)
        except LatheError:
            return
        if is_locked(other):
            raise UsageError(
                f"the last change here is a turn of session {operation.session}, which is "
                "open in another lathe: undo it there, where its model will learn of it"
            )

    async def list_checkpoints(self, app: InteractiveApp) -> None:
        if self.checkpoints is None:
            app.renderer.error(_NO_CHECKPOINTS)
            return
        try:
            items = await asyncio.to_thread(self.checkpoints.list)
        except LatheError as exc:
            app.renderer.error(str(exc))
            return
        if not items:
            app.renderer.note("no checkpoints yet: they are taken around turns that change files")
            return
        for item in items[:20]:
            files = _names([f.path for f in item.files[:4]])
            more = f" +{len(item.files) - 4}" if len(item.files) > 4 else ""
            app.renderer.note(
                f"  {item.n:>3}  {item.time:%H:%M:%S}  {item.label:<22} {files}{more}", ""
            )
        app.renderer.note("/undo reverts the newest agent turn; `lathe checkpoints` has more")


def show_last_exchanges(app: InteractiveApp, messages: list[Message], count: int = 3) -> None:
    """The last `count` messages the person typed of a resumed conversation, with the
    replies and lathe's own notes (`origin="lathe"`: shown dim as lathe's, never as
    typed) around them."""
    shown: list[Message] = []
    for message in reversed(messages):
        if isinstance(message, UserMessage) or (
            isinstance(message, AssistantMessage) and message.text.strip()
        ):
            shown.append(message)
            if sum(isinstance(m, UserMessage) and m.origin == "user" for m in shown) >= count:
                break
    if not shown:
        return
    app.renderer.note("── earlier in this session ──")
    for message in reversed(shown):
        if isinstance(message, UserMessage) and message.origin == "lathe":
            app.renderer.note(_clip_note(message.content, app.renderer.glyphs.ellipsis))
        elif isinstance(message, UserMessage):
            app.renderer.user_echo(message.content[:500])
        else:
            app.renderer.markdown(message.text[-2000:])
    app.renderer.note("── now ──")


def _names(paths: list[str]) -> str:
    """Files named to the person, comma-separated, each as `lathe undo` names it
    (`visible_name`: a newline in one is written out, not a line split)."""
    from lathe.exec.terminal import visible_name

    return ", ".join(map(visible_name, paths))


def _clip_note(text: str, ellipsis: str, lines: int = 3) -> str:
    kept = text.strip().splitlines()
    more = f"\n  {ellipsis} ({len(kept) - lines} more lines)" if len(kept) > lines else ""
    return "lathe: " + "\n  ".join(line[:200] for line in kept[:lines]) + more


def _in_workspace(session: Any, workspace: Path) -> None:
    """`session.check_workspace`, the session closed again (unlocked) when it fails."""
    try:
        session.check_workspace(workspace)
    except LatheError:
        session.close()
        raise
