"""The sessions one server runs, and the registry that lets them outlive it.

Each served session has a record in `LATHE_HOME/serve/sessions/<id>.json` (written
whole, atomically, when it is created, forked or resumed; removed when it is deleted).
A server that starts reads them all back: every session is listed again, its pending
approvals with it. Sessions are isolated: each has its own workspace (one may not lie
inside another live session's), config layers, policy, sandbox, approver and journal;
what they share is only the server's limits (`ServerLimits`).
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

from lathe.errors import UsageError
from lathe.service.limits import ServerLimits
from lathe.service.live import ServedSession, SessionOptions, SessionRecord


class UnknownSession(LookupError):
    """No session with that id is served here (or stored, for resume)."""


class SessionConflict(UsageError):
    """The request contradicts a live session (overlapping workspaces)."""


class SessionManager:
    def __init__(self, home: Path, limits: ServerLimits, *, keep_records: bool = True) -> None:
        """`keep_records` False: the sessions end with this process (`lathe mcp serve`
        over stdio, whose calls each serve one session for their own length)."""
        from lathe.session import SessionStore

        self.home = home
        self.limits = limits
        self.store = SessionStore(home)
        self.registry = home / "serve" / "sessions"
        self.keep_records = keep_records
        self.sessions: dict[str, ServedSession] = {}
        self.problems: list[str] = []  # records a restart could not bring back, and why
        self._lock = asyncio.Lock()  # one creation at a time: the workspace check holds

    async def restore(self) -> None:
        """Bring back every session the registry names (after a restart or a crash)."""
        if not self.keep_records:
            return
        for path in sorted(self.registry.glob("*.json")):
            try:
                record = SessionRecord.model_validate_json(path.read_text())
                session = await asyncio.to_thread(self.store.open_path, Path(record.session_path))
                served = ServedSession(record, session, self.limits)
                await served.start()
            except Exception as exc:  # one broken record must not keep the others down
                self.problems.append(f"{path.name}: {exc}")
                continue
            self.sessions[served.id] = served

    def get(self, session_id: str) -> ServedSession:
        served = self.sessions.get(session_id)
        if served is None:
            raise UnknownSession(session_id)
        return served

    async def create(self, options: SessionOptions) -> ServedSession:
        async with self._lock:
            workspace = self._free_workspace(options.workspace)
            session = await asyncio.to_thread(
                self.store.create, workspace, options.model or "default"
            )
            return await self._serve(options, session)

    async def fork(self, session_id: str) -> ServedSession:
        """A new session holding the conversation of `session_id` so far. It works in
        the same workspace, so the original stops being served."""
        source = self.get(session_id)
        options = SessionOptions.model_validate(source.record.model_dump(include=_OPTIONS))
        async with self._lock:
            await self._stop(source)
            session = await asyncio.to_thread(self.store.fork, session_id)
            return await self._serve(options, session)

    async def resume(self, session_id: str, changes: dict[str, Any]) -> ServedSession:
        """Serve a stored session (one `lathe run` wrote, or one deleted from here),
        with `changes` to its options."""
        if session_id in self.sessions:
            return self.sessions[session_id]
        try:
            path = await asyncio.to_thread(self.store.find, session_id)
        except UsageError:
            raise UnknownSession(session_id) from None
        async with self._lock:
            session = await asyncio.to_thread(self.store.open_path, path)
            try:
                options = SessionOptions.model_validate({"workspace": session.header.cwd,
                                                         **changes})  # fmt: skip
                self._free_workspace(options.workspace)
            except BaseException:
                session.close()
                raise
            return await self._serve(options, session)

    async def delete(self, session_id: str) -> ServedSession:
        """Stop serving the session; its files stay (resume it again later)."""
        served = self.get(session_id)
        async with self._lock:
            await self._stop(served)
        return served

    async def close(self) -> None:
        """Server shutdown: stop every run; the registry keeps the sessions for the next."""
        await asyncio.gather(*(s.close() for s in self.sessions.values()), return_exceptions=True)

    def metrics(self) -> dict[str, Any]:
        sessions = list(self.sessions.values())
        costs = [s.cost_usd for s in sessions]
        return {
            "sessions": len(sessions),
            "running_sessions": sum(s.running for s in sessions),
            "pending_approvals": sum(len(s.approver.pending) for s in sessions),
            "running_commands": self.limits.commands.running,
            "queued_commands": self.limits.commands.waiting,
            "max_commands": self.limits.commands.limit,
            "model_calls_in_flight": self.limits.model_calls_in_flight,
            "queued_model_calls": self.limits.queued_model_calls,
            "tokens": sum(s.usage.total for s in sessions),
            "cost_usd": None if None in costs else round(sum(c or 0.0 for c in costs), 6),
        }

    async def _serve(self, options: SessionOptions, session: Any) -> ServedSession:
        record = SessionRecord(**options.model_dump(), id=session.id,
                               session_path=str(session.path))  # fmt: skip
        served = ServedSession(record, session, self.limits)
        try:
            await served.start()
        except BaseException:
            await served.close()
            raise
        self._save(record)
        self.sessions[served.id] = served
        return served

    async def _stop(self, served: ServedSession) -> None:
        self.sessions.pop(served.id, None)
        (self.registry / f"{served.id}.json").unlink(missing_ok=True)
        await served.close()

    def _save(self, record: SessionRecord) -> None:
        from lathe.atomic_write import write_atomic

        if not self.keep_records:
            return
        self.registry.mkdir(parents=True, exist_ok=True)
        text = json.dumps(record.model_dump(), indent=1)
        write_atomic(self.registry / f"{record.id}.json", text.encode())

    def _free_workspace(self, workspace: str) -> Path:
        """The workspace, resolved; refused when it overlaps a live session's."""
        path = Path(workspace).expanduser()
        if not path.is_absolute():
            raise UsageError(f"workspace {workspace!r} is not an absolute path; give one")
        if not path.is_dir():
            raise UsageError(f"workspace {workspace} is not a directory; create it first")
        path = path.resolve()
        for other in self.sessions.values():
            theirs = Path(other.setup.workspace)
            if path == theirs or path.is_relative_to(theirs) or theirs.is_relative_to(path):
                raise SessionConflict(
                    f"workspace {path} overlaps {theirs}, where session {other.id} works; "
                    "give each session its own folder (or delete that session first)"
                )
        return path


_OPTIONS = set(SessionOptions.model_fields)
