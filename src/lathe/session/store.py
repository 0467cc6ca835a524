"""Where sessions live and how they are found, opened, listed and forked.

Layout: `<home>/sessions/<project_slug(workspace)>/<created>_<id>.jsonl`, with a
`<created>_<id>.lock` sidecar next to a file that has been opened for writing. Session
ids are 12 hex digits; every command accepts a unique prefix.
"""

from __future__ import annotations

import os
import re
import shutil
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from lathe.errors import UsageError
from lathe.home import project_slug
from lathe.session.entries import (
    ENTRY_ADAPTER,
    FORMAT_VERSION,
    Entry,
    Header,
    MessageEntry,
    RunEndEntry,
    new_session_id,
)
from lathe.session.loader import Loaded, Tail, load_file
from lathe.session.lock import SessionLock, is_locked
from lathe.session.session import Session, write_durably
from lathe.session.tree import EntryTree
from lathe.types import AssistantMessage, UserMessage

if TYPE_CHECKING:
    from lathe.session.index import SummaryIndex

_ID_PREFIX = re.compile(r"[A-Za-z0-9-]+")
_LIST_HINT = "`lathe sessions list --all` shows every session"


@dataclass(frozen=True)
class SessionSummary:
    id: str
    path: Path
    created: datetime
    updated: datetime  # the file's modification time
    cwd: str
    title: str  # first line of the first user message, "" when there is none
    turns: int  # assistant messages in the file
    tokens: int  # input + output tokens over every assistant message in the file
    status: str  # "running" (locked), the last run's status, or "unfinished" (crashed)
    parent_session: str | None = None


def _session_id(path: Path) -> str:
    return path.stem.rpartition("_")[2]


def _fsync_dir(directory: Path) -> None:
    fd = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _lines(header: Header, entries: list[Entry]) -> bytes:
    parts = [header.model_dump_json().encode(), *map(ENTRY_ADAPTER.dump_json, entries)]
    return b"\n".join(parts) + b"\n"


def _ended_status(entries: list[Entry]) -> str:
    """A run's end describes the session only if no message came after it: a resumed
    run that then crashed must not show the earlier run's status. (A held lock, which
    means a run is appending now, is "running": checked live, never cached.)"""
    for entry in reversed(entries):
        if isinstance(entry, RunEndEntry):
            return entry.status
        if isinstance(entry, MessageEntry):
            break
    return "unfinished"


def _counts(entries: list[Entry]) -> dict[str, Any]:
    """The title (first line of the first user message), turns and tokens of a session."""
    title = ""
    turns = tokens = 0
    for entry in entries:
        if not isinstance(entry, MessageEntry):
            continue
        message = entry.message
        if isinstance(message, UserMessage) and not title:
            title = next(iter(message.content.strip().splitlines()), "")
        elif isinstance(message, AssistantMessage):
            turns += 1
            tokens += message.usage.total
    return {"title": title, "turns": turns, "tokens": tokens}


def _extended(
    path: Path, fields: dict[str, Any], start: int, end: int
) -> dict[str, Any] | None:
    """`fields` (a summary of the file up to `start`) with the whole lines between
    `start` and `end` counted in; None when any of them is not a clean entry line, which
    leaves the damage to the full parse and its crash rules."""
    with path.open("rb") as handle:
        handle.seek(start)
        data = handle.read(end - start)
    if len(data) != end - start or not data.endswith(b"\n"):
        return None
    entries: list[Entry] = []
    for line in data[:-1].split(b"\n"):
        try:
            entries.append(ENTRY_ADAPTER.validate_json(line))
        except ValueError:  # pydantic's ValidationError included
            return None
    counts = _counts(entries)
    ended = _ended_status(entries) if _has_ending(entries) else fields["ended"]
    return {
        **fields,
        "title": fields["title"] or counts["title"],
        "turns": fields["turns"] + counts["turns"],
        "tokens": fields["tokens"] + counts["tokens"],
        "ended": ended,
    }


def _has_ending(entries: list[Entry]) -> bool:
    """Whether `entries` hold what decides `_ended_status` (a message or a run's end)."""
    return any(isinstance(e, MessageEntry | RunEndEntry) for e in entries)


def _summary_from(index: SummaryIndex, path: Path) -> SessionSummary | None:
    """`path`'s summary from the index when the file is unchanged, brought up to date
    from its new lines when it only grew, else parsed (and the index updated); None for
    a file that cannot be read at all."""
    try:
        stat = path.stat()
        cached = index.get(path, stat)
        if cached is None:
            grown = index.grown(path, stat)
            cached = _extended(path, *grown, stat.st_size) if grown else None
            if cached is not None:
                index.put(path, stat, cached, growable=True)
        if cached is None:
            loaded = load_file(path)
            cached = {
                "id": loaded.header.id,
                "created": loaded.header.created.isoformat(),
                "cwd": loaded.header.cwd,
                "parent_session": loaded.header.parent_session,
                **_counts(loaded.entries),
                "ended": _ended_status(loaded.entries),
            }
            clean = loaded.version == FORMAT_VERSION and loaded.tail is Tail.CLEAN
            index.put(path, stat, cached, growable=clean and not loaded.warnings)
    except (UsageError, OSError):
        return None
    return SessionSummary(
        id=cached["id"],
        path=path,
        created=datetime.fromisoformat(cached["created"]),
        updated=datetime.fromtimestamp(stat.st_mtime, UTC),
        cwd=cached["cwd"],
        title=cached["title"],
        turns=cached["turns"],
        tokens=cached["tokens"],
        status="running" if is_locked(path) else cached["ended"],
        parent_session=cached["parent_session"],
    )


class SessionStore:
    def __init__(self, home: Path) -> None:
        self.root = home / "sessions"

    def project_dir(self, workspace: Path) -> Path:
        return self.root / project_slug(workspace)

    def create(
        self,
        workspace: Path,
        model: str,
        *,
        parent_session: str | None = None,
        parent_entry: str | None = None,
    ) -> Session:
        """A new, empty, locked session for `workspace`."""
        header = Header(
            id=new_session_id(),
            cwd=str(workspace.resolve()),
            model=model,
            parent_session=parent_session,
            parent_entry=parent_entry,
        )
        return self._write_new(header, [])

    def _write_new(self, header: Header, entries: list[Entry]) -> Session:
        directory = self.project_dir(Path(header.cwd))
        directory.mkdir(parents=True, exist_ok=True)
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
        candidates = ", ".join(_session_id(path) for path in matches[:10])
        more = f" and {len(matches) - 10} more" if len(matches) > 10 else ""
        raise UsageError(
            f"session prefix {id_or_prefix!r} is ambiguous: it matches {candidates}{more}; "
            "give more characters"
        )

    def open(self, id_or_prefix: str, *, readonly: bool = False) -> Session:
        """Load a session. Unless `readonly`, lock it for appending: a torn last line is
        cut off and a file in an older format is rewritten in the current one (the
        original kept as `.v<N>.bak`)."""
        return self.open_path(self.find(id_or_prefix), readonly=readonly)

    def open_path(self, path: Path, *, readonly: bool = False) -> Session:
        if readonly:
            loaded = load_file(path)
            return Session(path, loaded.header, loaded.tree, loaded.warnings)
        lock = SessionLock.acquire(path, _session_id(path))
        try:
            loaded = load_file(path)
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
        base = self.root if workspace is None else self.project_dir(workspace)
        pattern = "*/*.jsonl" if workspace is None else "*.jsonl"
        return list(base.glob(pattern)) if base.is_dir() else []

    def latest(self, workspace: Path, *, readonly: bool = False) -> Session | None:
        """The most recently modified session of `workspace`, or None."""
        paths = self._paths(workspace)
        if not paths:
            return None
        return self.open_path(max(paths, key=lambda p: p.stat().st_mtime), readonly=readonly)

    def list(self, workspace: Path | None = None) -> list[SessionSummary]:
        """Summaries, newest first, of `workspace`'s sessions (every session if None).
        Files that cannot be read at all (no header, newer format) are left out. Only
        files changed since they were last listed are parsed (`session.index`)."""
        from lathe.session.index import SummaryIndex

        summaries = []
        by_folder: dict[Path, list[Path]] = {}
        for path in self._paths(workspace):
            by_folder.setdefault(path.parent, []).append(path)
        for folder, paths in by_folder.items():
            index = SummaryIndex(folder)
            for path in paths:
                summary = _summary_from(index, path)
                if summary is not None:
                    summaries.append(summary)
            index.save({path.name for path in paths})
        summaries.sort(key=lambda summary: summary.updated, reverse=True)
        return summaries

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
