"""The interactive face's ties to the session store and the checkpoint store.

Both are optional at import time: a lathe without `lathe.session` or `lathe.checkpoint`
still runs, and the commands that need them say so instead of pretending. The session
file is created lazily, with the first message, so opening lathe and leaving at once
leaves nothing behind.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import TYPE_CHECKING, Any

from lathe.agent.hooks import AgentHooks
from lathe.errors import LatheError
from lathe.events import Compacted, RunFinished
from lathe.home import lathe_home
from lathe.types import AssistantMessage, Message, UserMessage

if TYPE_CHECKING:
    from lathe.ui.interactive.app import InteractiveApp

_NO_SESSIONS = "sessions are not available in this build of lathe (lathe.session is missing)"
_NO_CHECKPOINTS = (
    "checkpoints are not available in this build of lathe (lathe.checkpoint is missing)"
)


class Links(AgentHooks):
    """Records the conversation into a session and snapshots the workspace around
    turns that may change files. Used as one of the agent's hooks."""

    def __init__(self, workspace: Path, model: str) -> None:
        self.workspace = workspace
        self.model = model
        self.session: Any = None
        self._last_compaction: Compacted | None = None
        try:
            from lathe.session import SessionStore

            self.store: Any = SessionStore(lathe_home())
        except ImportError:
            self.store = None
        try:
            from lathe.checkpoint import Checkpoints

            self.checkpoints: Any = Checkpoints(workspace, lathe_home())
        except ImportError:
            self.checkpoints = None
        self.checkpoint_error = ""

    # hooks

    def on_message(self, message: Message) -> None:
        if self.store is None:
            return
        if self.session is None:
            self.session = self.store.create(self.workspace, self.model)
        self.session.append_message(message)

    def on_compaction(self, summary: str, kept_messages: int) -> None:
        if self.session is None or self._last_compaction is None:
            return
        from lathe.session import CompactionEntry, MessageEntry

        entries = [e for e in self.session.branch() if isinstance(e, MessageEntry)]
        if not entries or kept_messages <= 0 or kept_messages > len(entries):
            return
        event = self._last_compaction
        self.session.append(
            CompactionEntry(
                summary=summary,
                first_kept=entries[-kept_messages].id,
                tokens_before=event.tokens_before,
                tokens_after=event.tokens_after,
            )
        )

    async def before_changes(self, turn: int) -> None:
        await self._snapshot("before_turn", turn)

    async def after_changes(self, turn: int) -> None:
        await self._snapshot("after_turn", turn)

    async def _snapshot(self, method: str, turn: int) -> None:
        if self.checkpoints is None:
            return
        try:
            await asyncio.to_thread(getattr(self.checkpoints, method), turn)
        except LatheError as exc:  # a broken checkpoint store must not stop the work
            self.checkpoint_error = str(exc)

    def observe(self, event: Any) -> None:
        """Events the session records that are not messages."""
        if isinstance(event, Compacted):
            self._last_compaction = event
        elif isinstance(event, RunFinished):
            self.record_run_end(event.status.value, event.turns, event.usage, event.reason)

    def record_run_end(self, status: str, turns: int, usage: Any, reason: str = "") -> None:
        if self.session is None:
            return
        from lathe.session import RunEndEntry

        self.session.append(RunEndEntry(status=status, turns=turns, usage=usage, reason=reason))

    def record_model_change(self, provider: str, model: str) -> None:
        self.model = model
        if self.session is None:
            return
        from lathe.session import ModelChangeEntry

        self.session.append(ModelChangeEntry(provider=provider, model=model))

    async def close(self) -> None:
        if self.session is not None:
            self.session.close()
            self.session = None

    # opening sessions

    def open_at_start(self, app: InteractiveApp) -> None:
        options = app.options
        if not (options.continue_session or options.resume):
            return
        if self.store is None:
            app.renderer.error(_NO_SESSIONS + "; starting a new conversation")
            return
        if options.resume:
            session = self.store.open(options.resume)
        else:
            session = self.store.latest(self.workspace)
            if session is None:
                app.renderer.note("no earlier session in this workspace; starting a new one")
                return
        self._switch(app, session)

    def _switch(self, app: InteractiveApp, session: Any) -> None:
        if self.session is not None:
            self.session.close()
        self.session = session
        for warning in session.warnings:
            app.renderer.note(f"session: {warning}", "yellow")
        session.close_dangling_tool_calls()
        app.agent.messages[:] = session.conversation()
        app.renderer.note(f"session {session.id} · {len(app.agent.messages)} messages", "green")
        show_last_exchanges(app, session.messages())

    # commands

    async def list_sessions(self, app: InteractiveApp) -> None:
        if self.store is None:
            app.renderer.error(_NO_SESSIONS)
            return
        summaries = self.store.list(self.workspace)
        if not summaries:
            app.renderer.note("no sessions in this workspace yet")
            return
        current = self.session.id if self.session is not None else None
        for summary in summaries[:20]:
            mark = "*" if summary.id == current else " "
            title = summary.title or "(no message)"
            app.renderer.note(
                f"{mark} {summary.id}  {summary.updated:%Y-%m-%d %H:%M}  {summary.turns:>3} turns"
                f"  {summary.status:<10}  {title[:50]}",
                "",
            )
        app.renderer.note("/resume ID continues one; a unique prefix of the id is enough")

    async def resume(self, app: InteractiveApp, session_id: str | None) -> None:
        if self.store is None:
            app.renderer.error(_NO_SESSIONS)
            return
        if session_id is None:
            current = self.session.id if self.session is not None else None
            others = [s for s in self.store.list(self.workspace) if s.id != current]
            if not others:
                app.renderer.note("no other session in this workspace to resume")
                return
            session_id = others[0].id
        try:
            session = self.store.open(session_id)
        except LatheError as exc:
            app.renderer.error(str(exc))
            return
        self._switch(app, session)

    async def fork(self, app: InteractiveApp) -> None:
        if self.store is None:
            app.renderer.error(_NO_SESSIONS)
            return
        if self.session is None:
            app.renderer.note("nothing to fork yet: this conversation has no messages")
            return
        old = self.session.id
        forked = self.store.fork(old)
        self.session.close()
        self.session = forked
        app.renderer.note(f"forked session {old} into {forked.id}; continuing in the fork", "green")

    async def clear(self, app: InteractiveApp) -> None:
        await self.close()  # the next message starts a new session file

    async def undo(self, app: InteractiveApp) -> None:
        if self.checkpoints is None:
            app.renderer.error(_NO_CHECKPOINTS)
            return
        try:
            report = await asyncio.to_thread(self.checkpoints.undo)
        except LatheError as exc:
            app.renderer.error(str(exc))
            return
        changed = report.restored + report.recreated + report.deleted
        if report.changed:
            app.renderer.note(
                f"undone: {report.target.label and 'back to ' + report.target.label}", "green"
            )
            for label, paths in (
                ("restored", report.restored),
                ("recreated", report.recreated),
                ("deleted", report.deleted),
            ):
                if paths:
                    app.renderer.note(f"  {label}: {', '.join(paths)}", "")
        else:
            app.renderer.note("undo: no file needed to change")
        if report.kept:
            app.renderer.note(
                f"  kept (you changed them since): {', '.join(report.kept)}; "
                "`lathe undo --force` overwrites them",
                "yellow",
            )
        if changed:
            app.agent.append(
                UserMessage(
                    content="[The user undid the last change to the workspace with /undo; "
                    f"these files were reverted: {', '.join(changed)}. Re-read files before "
                    "editing them.]"
                )
            )
            app.agent.append(AssistantMessage(text="Understood; I will re-read before editing."))

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
            files = ", ".join(f.path for f in item.files[:4])
            more = f" +{len(item.files) - 4}" if len(item.files) > 4 else ""
            app.renderer.note(
                f"  {item.n:>3}  {item.time:%H:%M:%S}  {item.label:<22} {files}{more}", ""
            )
        app.renderer.note("/undo reverts the newest agent turn; `lathe checkpoints` has more")


def show_last_exchanges(app: InteractiveApp, messages: list[Message], count: int = 3) -> None:
    """The last few user messages and replies of a resumed conversation."""
    shown: list[Message] = []
    for message in reversed(messages):
        if isinstance(message, UserMessage) or (
            isinstance(message, AssistantMessage) and message.text.strip()
        ):
            shown.append(message)
            if sum(isinstance(m, UserMessage) for m in shown) >= count:
                break
    if not shown:
        return
    app.renderer.note("── earlier in this session ──")
    for message in reversed(shown):
        if isinstance(message, UserMessage):
            app.renderer.user_echo(message.content[:500])
        else:
            app.renderer.markdown(message.text[-2000:])
    app.renderer.note("── now ──")
