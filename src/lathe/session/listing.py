"""`lathe sessions list`: a summary of every session, kept cheap at any number and size.

The summaries come from the index beside the sessions (`session.index`) for files
unchanged since they were last listed, from only the new lines of a file that grew,
and from a full parse otherwise. Only those last two need the entry models, so this
module imports them when a file must be read: a listing the index answers does not
pay for pydantic and the message types (100 ms of a 200 ms `sessions list`).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from lathe.errors import UsageError
from lathe.home import project_slug
from lathe.session.index import SummaryIndex
from lathe.session.lock import is_locked

if TYPE_CHECKING:
    from lathe.session.entries import Entry


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


def _ended_status(entries: list[Entry]) -> str:
    """A run's end describes the session only if no message came after it: a resumed
    run that then crashed must not show the earlier run's status. (A held lock, which
    means a run is appending now, is "running": checked live, never cached.)"""
    from lathe.session.entries import MessageEntry, RunEndEntry

    for entry in reversed(entries):
        if isinstance(entry, RunEndEntry):
            return entry.status
        if isinstance(entry, MessageEntry):
            break
    return "unfinished"


def _counts(entries: list[Entry]) -> dict[str, Any]:
    """The title (first line of the first user message), turns and tokens of a session."""
    from lathe.session.entries import MessageEntry
    from lathe.types import AssistantMessage, UserMessage

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
    from lathe.session.entries import ENTRY_ADAPTER

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
    from lathe.session.entries import MessageEntry, RunEndEntry

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
            from lathe.session.entries import FORMAT_VERSION
            from lathe.session.loader import Tail, load_file

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


def sessions_root(home: Path) -> Path:
    """Where the sessions of lathe's data dir `home` live."""
    return home / "sessions"


def session_paths(root: Path, workspace: Path | None) -> list[Path]:
    """The session files under `root` of `workspace`, or of every workspace if None."""
    base = root if workspace is None else root / project_slug(workspace)
    pattern = "*/*.jsonl" if workspace is None else "*.jsonl"
    return list(base.glob(pattern)) if base.is_dir() else []


def list_sessions(root: Path, workspace: Path | None = None) -> list[SessionSummary]:
    """Summaries, newest first, of `workspace`'s sessions under `root` (every session if
    None). Files that cannot be read at all (no header, newer format) are left out. Only
    files changed since they were last listed are parsed (`session.index`)."""
    summaries = []
    by_folder: dict[Path, list[Path]] = {}
    for path in session_paths(root, workspace):
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
