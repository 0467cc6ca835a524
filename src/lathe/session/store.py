"""Where sessions live and how they are found, opened, listed and forked.

Layout: `<home>/sessions/<project_slug(workspace)>/<created>_<id>.jsonl`, with a
`<created>_<id>.lock` sidecar next to a file that has been opened for writing. Session
ids are 12 hex digits; every command accepts a unique prefix.
"""

from __future__ import annotations

import gc
import os
import re
import shutil
from datetime import UTC, datetime
from pathlib import Path

from lathe.errors import UsageError
from lathe.home import private_folder
from lathe.plural import some_of
from lathe.session.entries import ENTRY_ADAPTER, FORMAT_VERSION, Entry, Header, new_session_id
from lathe.session.listing import (
    SessionSummary,
    list_sessions,
    project_dir,
    session_paths,
    sessions_root,
)
from lathe.session.loader import Loaded, NewerSessionFormat, Tail, collector_paused, load_file
from lathe.session.lock import SessionLock
from lathe.session.session import Session, write_durably
from lathe.session.tree import EntryTree

_ID_PREFIX = re.compile(r"[A-Za-z0-9-]+")
_LIST_HINT = "`lathe sessions list --all` shows every session"


def _session_id(path: Path) -> str:
    return path.stem.rpartition("_")[2]


def _modified(path: Path) -> datetime:
    """When `path` was last written; the earliest time there is when it is gone."""
    try:
        return datetime.fromtimestamp(path.stat().st_mtime, UTC)
    except OSError:
        return datetime.min.replace(tzinfo=UTC)


def _fsync_dir(directory: Path) -> None:
    fd = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _load_to_keep(path: Path) -> Loaded:
    """`load_file` for a session that stays open: what it loaded goes straight to the
    collector's permanent generation (`gc.freeze`, with whatever else the process holds,
    as the faces do after start-up). The collector was paused while parsing, so each of
    those objects is still young, and the first collection after the load would walk
    them all (a fifth of opening 50k entries), then each older generation again. The
    entries hold no cycles: a session dropped later is still freed by reference counts."""
    with collector_paused():
        loaded = load_file(path)
        gc.freeze()
    return loaded


def _lines(header: Header, entries: list[Entry]) -> bytes:
    parts = [header.model_dump_json().encode(), *map(ENTRY_ADAPTER.dump_json, entries)]
    return b"\n".join(parts) + b"\n"


class SessionStore:
    def __init__(self, home: Path) -> None:
        self.root = sessions_root(home)

    def project_dir(self, workspace: Path) -> Path:
        return project_dir(self.root, workspace)

    def create(
        self,
        workspace: Path,
        model: str,
        *,
        parent_session: str | None = None,
        parent_entry: str | None = None,
        parent_call: str | None = None,
    ) -> Session:
        """A new, empty, locked session for `workspace`; a child agent's names its
        parent's session and the call that started it."""
        header = Header(
            id=new_session_id(),
            cwd=str(workspace.resolve()),
            model=model,
            parent_session=parent_session,
            parent_entry=parent_entry,
            parent_call=parent_call,
        )
        return self._write_new(header, [])

    def _write_new(self, header: Header, entries: list[Entry]) -> Session:
        directory = private_folder(self.project_dir(Path(header.cwd)))
        path = directory / f"{header.created:%Y%m%dT%H%M%SZ}_{header.id}.jsonl"
        lock = SessionLock.acquire(path, header.id)
        try:
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
            try:
                write_durably(fd, _lines(header, entries))
            finally:
                os.close(fd)
            _fsync_dir(directory)
            return Session(path, header, EntryTree(entries), lock=lock)
        except BaseException:
            lock.release()
            raise

    def find(self, id_or_prefix: str) -> Path:
        """The file of the one session whose id starts with `id_or_prefix`."""
        if not _ID_PREFIX.fullmatch(id_or_prefix):
            raise UsageError(f"{id_or_prefix!r} is not a session id; {_LIST_HINT}")
        paths = sorted(self._paths(None))
        exact = [path for path in paths if _session_id(path) == id_or_prefix]
        matches = exact or [p for p in paths if _session_id(p).startswith(id_or_prefix)]
        if len(matches) == 1:
            return matches[0]
        if not matches:
            raise UsageError(f"no session id starts with {id_or_prefix!r}; {_LIST_HINT}")
        candidates = some_of([_session_id(path) for path in matches], 10)
        raise UsageError(
            f"session prefix {id_or_prefix!r} is ambiguous: it matches {candidates}; "
            "give more characters"
        )

    def full_id(self, id_or_prefix: str) -> str:
        """The id of the one session whose id starts with `id_or_prefix` (as `find`)."""
        return _session_id(self.find(id_or_prefix))

    def open(self, id_or_prefix: str, *, readonly: bool = False) -> Session:
        """Load a session. Unless `readonly`, lock it for appending: a torn last line is
        cut off and a file in an older format is rewritten in the current one (the
        original kept as `.v<N>.bak`)."""
        return self.open_path(self.find(id_or_prefix), readonly=readonly)

    def open_path(self, path: Path, *, readonly: bool = False) -> Session:
        try:
            return self._open_path(path, readonly=readonly)
        except OSError as exc:  # a folder in its place, no permission, a full disk
            raise UsageError(
                f"cannot open the session {path}: {exc.strerror or exc}; fix it, move it "
                "aside, or start a new session"
            ) from exc

    def _open_path(self, path: Path, *, readonly: bool) -> Session:
        if readonly:
            loaded = _load_to_keep(path)
            return Session(path, loaded.header, loaded.tree, loaded.warnings)
        lock = SessionLock.acquire(path, _session_id(path))
        try:
            loaded = _load_to_keep(path)
            self._prepare_for_append(path, loaded)
            return Session(path, loaded.header, loaded.tree, loaded.warnings, lock)
        except BaseException:
            lock.release()
            raise

    def _prepare_for_append(self, path: Path, loaded: Loaded) -> None:
        if loaded.version != FORMAT_VERSION:
            backup = path.with_suffix(f".v{loaded.version}.bak")
            shutil.copy2(path, backup)
            temporary = path.with_suffix(".tmp")
            fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
            try:
                write_durably(fd, _lines(loaded.header, loaded.entries))
            finally:
                os.close(fd)
            os.replace(temporary, path)
            _fsync_dir(path.parent)
            loaded.warnings.append(
                f"converted from format version {loaded.version} to {FORMAT_VERSION}; "
                f"the original is kept at {backup}"
            )
        elif loaded.tail is Tail.TORN:
            os.truncate(path, loaded.tail_offset)
        elif loaded.tail is Tail.UNTERMINATED:
            fd = os.open(path, os.O_WRONLY | os.O_APPEND)
            try:
                write_durably(fd, b"\n")
            finally:
                os.close(fd)

    def _paths(self, workspace: Path | None) -> list[Path]:
        return session_paths(self.root, workspace)

    def latest(self, workspace: Path, *, readonly: bool = False) -> Session | None:
        """The session of `workspace` the user worked in last (`SessionSummary.updated`:
        its last entry's time, so a fork made now is not it), or None: a subagent's
        session (it names its parent's call) is not one, nor one with no entry (a run
        killed before its first message, which had no chance to `close_or_discard` it:
        continuing it dropped the conversation before it), nor a file that cannot be
        read as a session (`lathe sessions list` warns of those). When a file of a newer
        format is later work (a newer lathe wrote to it after the last session this one
        reads), `NewerSessionFormat`: going on with an older session would drop, unsaid,
        the work the user means to continue."""
        unreadable: dict[Path, Exception] = {}
        summaries = list_sessions(self.root, workspace, unreadable=unreadable)
        chosen = next((summary for summary in summaries if summary.worked_in), None)
        since = chosen.updated if chosen is not None else datetime.min.replace(tzinfo=UTC)
        newer = [
            (when, error)
            for path, error in unreadable.items()
            if isinstance(error, NewerSessionFormat) and (when := _modified(path)) > since
        ]
        if newer:
            _, error = max(newer, key=lambda found: found[0])
            raise NewerSessionFormat(
                error.path,
                error.version,
                doing="continue it (`--resume ID` goes on with an older one: "
                "`lathe sessions list` shows them)",
            )
        return None if chosen is None else self.open_path(chosen.path, readonly=readonly)

    def list(self, workspace: Path | None = None) -> list[SessionSummary]:
        """Summaries, latest work first, of `workspace`'s sessions (every session if
        None): `lathe.session.listing.list_sessions`."""
        return list_sessions(self.root, workspace)

    def fork(self, session_id: str, at_entry: str | None = None) -> Session:
        """A new locked session holding copies (same ids) of the branch of `session_id`
        up to and including `at_entry` (an id or prefix; default its leaf). The
        original is not changed."""
        source = self.open(session_id, readonly=True)
        at = source.resolve(at_entry) if at_entry is not None else source.leaf
        entries = source.branch(at) if at is not None else []
        header = Header(
            id=new_session_id(),
            cwd=source.header.cwd,
            model=source.header.model,
            parent_session=source.id,
            parent_entry=at,
        )
        return self._write_new(header, entries)
