"""The sessions one server runs, and the registry that lets them outlive it.

Each served session has a record in `LATHE_HOME/serve/sessions/<id>.json` (written
whole, atomically, when it is created, forked or resumed; moved to stopped/ when it is deleted).
A server that starts reads them all back: every session is listed again, its pending
approvals with it. Sessions are isolated: each has its own workspace (one may not lie
inside another live session's), config layers, policy, sandbox, approver and journal;
what they share is only the server's limits (`ServerLimits`).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from lathe.errors import UsageError
from lathe.service.limits import ServerLimits
from lathe.service.live import ServedSession, SessionOptions, SessionRecord
from lathe.session.entries import NO_MODEL

if TYPE_CHECKING:
    from lathe.config.schema import ServeConfig


class UnknownSession(LookupError):
    """No session with that id is served here (or stored, for resume); its text says
    so, for the client."""

    def __init__(self, session_id: str, *, stored: bool = False) -> None:
        self.session_id = session_id
        super().__init__(
            f"no stored session {session_id}; see `lathe sessions list`"
            if stored
            else f"no session {session_id} is served here; list them with GET /v1/sessions"
        )


@dataclass
class _Unserved:
    """A registry record a start could not serve (see `SessionManager.problems`)."""

    problem: str
    path: Path  # the record's file
    record: SessionRecord | None  # None: the file could not be read


class SessionConflict(UsageError):
    """The request contradicts a live session (overlapping workspaces)."""


class SessionManager:
    """The sessions one server runs (see the module doc). Creating, forking, resuming
    and deleting are serialised (one lock), so the workspace rule holds."""

    def __init__(
        self,
        home: Path,
        limits: ServerLimits,
        *,
        keep_records: bool = True,
        any_endpoint: bool = False,
    ) -> None:
        """`keep_records` False: the sessions end with this process (`lathe mcp serve`
        over stdio, whose calls each serve one session for their own length).
        `any_endpoint`: a client may send a session's model requests — with this
        server's key — to any base URL, not only one on this machine."""
        from lathe.session import SessionStore

        self.home = home
        self.limits = limits
        self.store = SessionStore(home)
        self.registry = home / "serve" / "sessions"
        self.keep_records = keep_records
        self.any_endpoint = any_endpoint
        self.sessions: dict[str, ServedSession] = {}
        self._unserved: dict[str, _Unserved] = {}  # by id: records a start could not serve
        self._stopped: dict[str, SessionRecord] = {}  # sessions no longer served, by id
        self._stopped_dir = self.registry / "stopped"
        self._lock = asyncio.Lock()

    @property
    def problems(self) -> list[str]:
        """Why each record a start could not serve is not served, and what a client can
        do about it (resume it once that is fixed, or delete its record)."""
        return [unserved.problem for unserved in self._unserved.values()]

    async def restore(self) -> None:
        """Bring back every session the registry names (after a restart or a crash),
        the oldest first. One that cannot come back — its workspace gone, one it shares
        with a session served already, a start that fails — is named in `problems`, its
        files left alone and unlocked, until it is resumed or deleted."""
        if not self.keep_records:
            return
        records: list[tuple[SessionRecord, Path]] = []
        for path in sorted(self.registry.glob("*.json")):
            try:
                records.append((SessionRecord.model_validate_json(path.read_text()), path))
            except (OSError, ValueError) as exc:
                problem = f"{path.name}: unreadable ({exc}); {_drop(path.stem)}"
                self._unserved[path.stem] = _Unserved(problem, path, None)
        for record, path in sorted(records, key=lambda found: (found[0].created, found[0].id)):
            problem = await self._restore(record)
            if problem:
                self._unserved[record.id] = _Unserved(
                    f"session {record.id}: {problem}", path, record
                )

    async def _restore(self, record: SessionRecord) -> str:
        """Serve `record` again; what kept it from being served ("" when served)."""
        workspace = Path(record.workspace)
        if not workspace.is_dir():
            return (
                f"its workspace {workspace} is not there; POST /v1/sessions/{record.id}/resume "
                f"once it is back, or {_drop(record.id)}"
            )
        if other := self._overlapping(workspace.resolve()):
            return (
                f"its workspace {workspace} overlaps {other[1]}, where session {other[0]} "
                f"works, served first; {_drop(record.id)}, or delete {other[0]} and then "
                f"POST /v1/sessions/{record.id}/resume"
            )
        advice = f"POST /v1/sessions/{record.id}/resume once that is fixed, or {_drop(record.id)}"
        try:
            session = await asyncio.to_thread(self.store.open_path, Path(record.session_path))
        except Exception as exc:
            return f"{exc}; {advice}"
        served = ServedSession(record, session, self.limits)
        try:
            await served.start()
        except Exception as exc:  # one broken session must not keep the others down
            await served.close()
            return f"{exc}; {advice}"
        self.sessions[served.id] = served
        return ""

    def get(self, session_id: str) -> ServedSession:
        served = self.sessions.get(session_id)
        if served is None:
            raise UnknownSession(session_id)
        return served

    async def create(self, options: SessionOptions, *, kept: bool = True) -> ServedSession:
        """A new session served; `kept` False: served for one caller only (an MCP
        `run_task`), so no record brings it back after a restart with nobody to drive
        it (its files stay, like any session's)."""
        self._check_endpoint(options.base_url)
        async with self._lock:
            workspace = self._free_workspace(options.workspace)
            session = await asyncio.to_thread(
                self.store.create, workspace, options.model or NO_MODEL
            )
            return await self._serve(options, session, new=True, kept=kept)

    async def fork(self, session_id: str) -> ServedSession:
        """A new session holding the conversation of `session_id` so far. It works in
        the same workspace, so the original stops being served (and is served again
        if the fork cannot start). A running session is not forked: abort it first."""
        async with self._lock:
            source = self.get(session_id)
            if source.running:
                raise SessionConflict(
                    f"session {session_id} is running; abort it (POST .../abort) before forking"
                )
            options = SessionOptions.model_validate(source.record.model_dump(include=_OPTIONS))
            await self._stop(source)
            session = await asyncio.to_thread(self.store.fork, session_id)
            try:
                return await self._serve(options, session, new=True)
            except BaseException:
                again = await asyncio.to_thread(self.store.open, session_id)
                await self._serve(options, again)
                raise

    async def resume(self, session_id: str, changes: dict[str, Any]) -> ServedSession:
        """Serve a stored session (one `lathe run` wrote, or one deleted from here),
        with `changes` to its options."""
        self._check_endpoint(changes.get("base_url"))
        try:
            path = await asyncio.to_thread(self.store.find, session_id)
        except UsageError:
            raise UnknownSession(session_id, stored=True) from None
        async with self._lock:
            if any(Path(s.session.path) == path for s in self.sessions.values()):
                raise SessionConflict(
                    f"session {session_id} is served already; DELETE it first to change its options"
                )
            session = await asyncio.to_thread(self.store.open_path, path)
            try:
                earlier = self._earlier_record(session.id)
                before = self._options_before(session, earlier, changes)
                options = SessionOptions.model_validate({**before,
                                                         "workspace": session.header.cwd,
                                                         **changes})  # fmt: skip
                self._free_workspace(options.workspace, besides=session.id)
            except BaseException:
                session.close()
                raise
            served = await self._serve(options, session, created=earlier and earlier.created)
            (self._stopped_dir / f"{served.id}.json").unlink(missing_ok=True)
            self._unserved.pop(served.id, None)  # served now: no longer a problem
            return served

    async def delete(self, session_id: str) -> dict[str, Any]:
        """Stop serving the session, or drop the record of one a start could not serve
        (listed in `problems`); its files stay (resume it again later). What stopped:
        its id, status and session file."""
        async with self._lock:
            unserved = self._unserved.pop(session_id, None)
            if unserved is not None:
                self._put_aside(session_id, unserved.path)
                if unserved.record is not None:
                    self._stopped[session_id] = unserved.record
                path = unserved.record and unserved.record.session_path
            else:
                served = self.get(session_id)
                await self._stop(served)
                path = str(served.session.path)
        return {"id": session_id, "status": "stopped", "session_file": path}

    async def close(self) -> None:
        """Server shutdown: stop every run; the registry keeps the sessions for the next."""
        await asyncio.gather(*(s.close() for s in self.sessions.values()), return_exceptions=True)

    def metrics(self) -> dict[str, Any]:
        from lathe.agent.budget import tokens_of

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
            "tokens": sum(tokens_of(s.usage) for s in sessions),
            "cost_usd": None if None in costs else round(sum(c or 0.0 for c in costs), 6),
        }

    async def _serve(
        self,
        options: SessionOptions,
        session: Any,
        *,
        new: bool = False,
        kept: bool = True,
        created: str | None = None,
    ) -> ServedSession:
        """Serve `session`; when it cannot start, a `new` one's files are removed, so a
        failed create leaves nothing behind. `created`: when it was first served (a
        resumed session keeps its record's)."""
        when = {"created": created} if created else {}
        record = SessionRecord(**options.model_dump(), id=session.id,
                               session_path=str(session.path), **when)  # fmt: skip
        served = ServedSession(record, session, self.limits)
        try:
            await served.start()
        except BaseException:
            await served.close()
            if new:
                _discard(Path(session.path))
            raise
        if kept:
            self._save(record)
        self.sessions[served.id] = served
        return served

    async def _stop(self, served: ServedSession) -> None:
        """Stop serving; its record moves aside (`stopped/`), so a resume starts from
        the options it was served with and a restart does not serve it again."""
        self.sessions.pop(served.id, None)
        self._stopped[served.id] = served.record
        self._put_aside(served.id, self.registry / f"{served.id}.json")
        await served.close()

    def _put_aside(self, session_id: str, record: Path) -> None:
        """Move a record to `stopped/`: a restart does not serve it again, and a resume
        starts from its options."""
        if self.keep_records:
            self._stopped_dir.mkdir(parents=True, exist_ok=True, mode=0o700)
            with contextlib.suppress(FileNotFoundError):
                record.replace(self._stopped_dir / f"{session_id}.json")

    def _earlier_record(self, session_id: str) -> SessionRecord | None:
        """The record the session was last served with: stopped, or still in the
        registry (a session a start could not serve keeps its record there)."""
        record = self._stopped.get(session_id)
        for path in (
            self._stopped_dir / f"{session_id}.json",
            self.registry / f"{session_id}.json",
        ):
            if record is None and self.keep_records and path.is_file():
                with contextlib.suppress(OSError, ValueError):
                    record = SessionRecord.model_validate_json(path.read_text())
        return record

    def _options_before(
        self, session: Any, record: SessionRecord | None, changes: dict[str, Any]
    ) -> dict[str, Any]:
        """What a resumed session keeps unless `changes` change it: the options of its
        `record`; for one with no record here (`lathe run` made it, or a run_task), the
        model and settings its last run started with, as its file says. Never a default
        in their place: a conversation must not go to another model or endpoint, nor run
        under a looser approval, without the client saying so — a session whose file
        cannot say (an older lathe wrote it, an endpoint holding credentials) is refused
        (UsageError) until `changes` name them."""
        from lathe.session.entries import recorded_run

        if record is not None:
            return record.model_dump(include=_OPTIONS - {"workspace"}, exclude_none=True)
        recorded = recorded_run(session.branch(), session.header.model)
        for names, why in recorded.unsaid:
            _require(session.id, changes, list(names), why)
        return recorded.options

    def _save(self, record: SessionRecord) -> None:
        from lathe.atomic_write import write_atomic

        if not self.keep_records:
            return
        self.registry.mkdir(parents=True, exist_ok=True, mode=0o700)  # commands, endpoints
        text = json.dumps(record.model_dump(), indent=1)
        write_atomic(self.registry / f"{record.id}.json", text.encode())

    def _check_endpoint(self, base_url: str | None) -> None:
        from lathe.net import is_loopback

        if base_url and not self.any_endpoint and not is_loopback(base_url):
            raise UsageError(
                f"base_url {base_url} is not on this machine, and a session's requests carry "
                "the server's key; name a model the server's config knows instead, or start "
                "the server with serve.any_endpoint = true"
            )

    def _free_workspace(self, workspace: str, *, besides: str = "") -> Path:
        """The workspace, resolved; refused when it overlaps the workspace of a live
        session or of a record a start could not serve (but session `besides`, the one
        being resumed), or holds the server's data folder."""
        path = Path(workspace)  # `~` is the server's home, not the client's: refused
        if not path.is_absolute():
            raise UsageError(f"workspace {workspace!r} is not an absolute path; give one")
        try:  # a name too long, a NUL byte: the OS refuses to look (a 500 once)
            is_dir = path.is_dir()
        except (OSError, ValueError) as exc:
            raise UsageError(f"workspace {workspace[:80]!r} cannot be looked up: {exc}") from None
        if not is_dir:
            raise UsageError(f"workspace {workspace} is not a directory; create it first")
        path = path.resolve()
        home = self.home.resolve()
        if home.is_relative_to(path) or path.is_relative_to(home):
            raise UsageError(
                f"workspace {path} holds or lies in the server's data folder {self.home} "
                "(its token, sessions and records): an agent working there could read the "
                "token and rewrite them; give a folder apart from it"
            )
        if other := self._overlapping(path):
            raise SessionConflict(
                f"workspace {path} overlaps {other[1]}, where session {other[0]} works; "
                "give each session its own folder (or delete that session first)"
            )
        for session_id, unserved in self._unserved.items():
            theirs = unserved.record and Path(unserved.record.workspace).resolve()
            if theirs and session_id != besides and _overlap(path, theirs):
                raise SessionConflict(
                    f"workspace {path} overlaps {theirs}, the workspace of session "
                    f"{session_id}, which a restart could not serve; POST "
                    f"/v1/sessions/{session_id}/resume to serve it, or {_drop(session_id)}"
                )
        return path

    def _overlapping(self, path: Path) -> tuple[str, Path] | None:
        """The id and workspace of a live session whose workspace overlaps `path`."""
        for other in self.sessions.values():
            theirs = Path(other.setup.workspace)
            if _overlap(path, theirs):
                return other.id, theirs
        return None


def server_manager(max_commands: int | None, *, keep_records: bool = True) -> SessionManager:
    """The manager a server runs: lathe's data dir, the `serve` settings of the config
    where the server starts (`max_commands` from the command line wins). A project
    file's `serve` settings that need trust stop the server (UsageError) until trusted."""
    import os

    from lathe.home import lathe_home

    config = _serve_config(lathe_home())
    limits = ServerLimits(
        max_commands or config.max_commands or os.cpu_count() or 1, config.max_model_calls
    )
    return SessionManager(
        lathe_home(), limits, keep_records=keep_records, any_endpoint=config.any_endpoint
    )


def _serve_config(home: Path) -> ServeConfig:
    """The `serve` settings where the server starts, once those that need trust are
    trusted (a server has no one to ask: it stops, naming `lathe trust`)."""
    from lathe.config import load_config
    from lathe.config.trust import untrusted_serve_message, untrusted_settings

    loaded = load_config(Path.cwd())
    settings = untrusted_settings(loaded, home, commands_sandboxed=True, serving=True)
    message = settings and untrusted_serve_message(settings, home)
    if message:
        raise UsageError(message)
    return loaded.config.serve


def _overlap(one: Path, other: Path) -> bool:
    return one == other or one.is_relative_to(other) or other.is_relative_to(one)


def _require(session_id: str, changes: dict[str, Any], names: list[str], why: str) -> None:
    """Refuse the resume (UsageError) unless `changes` give each of `names`; the
    "endpoint" is given by a base_url, or by a model (as this server's config serves it)."""
    given = {name for name, value in changes.items() if value is not None}
    if given & {"base_url", "model"}:
        given.add("endpoint")
    missing = [name for name in names if name not in given]
    if missing:
        raise UsageError(
            f"session {session_id} cannot be resumed as it ran: {why}; resume it naming "
            + " and ".join(_HOW_TO_NAME[name] for name in missing)
        )


_HOW_TO_NAME = {
    "base_url": 'its endpoint ("base_url")',
    "endpoint": 'its endpoint ("base_url"; or "model", served from this server\'s config)',
    "approval": 'its approval mode ("approval": read-only, ask, auto or full)',
    "verify": 'its check ("verify")',
}


def _drop(session_id: str) -> str:
    return f"DELETE /v1/sessions/{session_id} to drop its record (its files stay)"


def _discard(session_path: Path) -> None:
    """Remove a session that never started: its file and those beside it (journal,
    log, lock) — they all share its name."""
    for path in session_path.parent.glob(f"{session_path.stem}.*"):
        path.unlink(missing_ok=True)


_OPTIONS = set(SessionOptions.model_fields)
