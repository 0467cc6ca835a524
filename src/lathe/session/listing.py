"""`lathe sessions list`: a summary of every session, kept cheap at any number and size.

The summaries come from the index beside the sessions (`session.index`) for files
unchanged since they were last listed, from only the new lines of a file that grew
(read as plain JSON, `session.appended`), and from a full parse otherwise. Only the
full parse needs the entry models (`session.summarise`), imported when a file must be
parsed: the other listings do not pay for pydantic and the message types (100 ms of a
200 ms `sessions list`).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

from lathe.errors import UsageError
from lathe.home import project_slug
from lathe.session import appended
from lathe.session.index import SummaryIndex
from lathe.session.lock import is_locked


@dataclass(frozen=True)
class SessionSummary:
    id: str
    path: Path
    created: datetime
    # When it was last worked in: its last entry's time (a fork copies its source's
    # entries, times and all), its creation when it has none. Not the file's mtime: a
    # fork made now is no later work, and `--continue` goes on with the latest work.
    updated: datetime
    cwd: str
    title: str  # first line of the first user message, "" when there is none
    turns: int  # assistant messages in the file
    tokens: int  # what its runs spent, as their ends say (`summarise` tells how)
    entries: int  # entries in the file (none: its run was killed before its first message)
    status: str  # "running" (locked), the last run's status, or "unfinished" (crashed)
    parent_session: str | None = None
    parent_call: str | None = None  # a subagent's: the parent's task call (else a fork)

    @property
    def worked_in(self) -> bool:
        """A session the user worked in, to go on with: not a subagent's, nor one with no
        entry (a run killed before its first message)."""
        return self.parent_call is None and self.entries > 0


def _summary_from(index: SummaryIndex, path: Path) -> SessionSummary:
    """`path`'s summary from the index when the file is unchanged, brought up to date
    from its new lines when it only grew, else parsed (and the index updated). Raises
    the UsageError or OSError of a file that cannot be read at all."""
    stat = path.stat()
    cached = _current(index.get(path, stat))
    if cached is None:
        grown = index.grown(path, stat)
        cached = (
            appended.grown(path, *grown, stat.st_size) if grown and _current(grown[0]) else None
        )
        if cached is not None:
            index.put(path, stat, cached, growable=True)
        else:
            from lathe.session import summarise  # the entry models: only to parse a file

            cached, growable = summarise.whole(path)
            index.put(path, stat, cached, growable=growable)
    return SessionSummary(
        id=cached["id"],
        path=path,
        created=datetime.fromisoformat(cached["created"]),
        updated=datetime.fromisoformat(cached["last"]),
        cwd=cached["cwd"],
        title=cached["title"],
        turns=cached["turns"],
        tokens=cached["tokens"],
        entries=cached["entries"],
        status="running" if is_locked(path) else cached["ended"],
        parent_session=cached["parent_session"],
        parent_call=cached["parent_call"],
    )


def _current(fields: dict[str, Any] | None) -> dict[str, Any] | None:
    """`fields` unless an older lathe cached them, before a summary said when its last
    entry was and what its runs spent: such a file is parsed again."""
    return fields if fields is not None and "last" in fields and "open_tokens" in fields else None


def remember(path: Path, fields: dict[str, Any], *, growable: bool) -> None:
    """Put `fields`, the summary of the session file `path` as it is now, into the index
    of its folder, so that the next listing need not read the file (the summary of a
    session its writer closes: `Session.close`). `growable` as for `SummaryIndex.put`.
    The index is a cache: a file lathe cannot stat or an index it cannot write is left
    to the next listing's parse."""
    index = SummaryIndex(path.parent)
    try:
        index.put(path, path.stat(), fields, growable=growable)
    except OSError:
        return
    index.save()


def sessions_root(home: Path) -> Path:
    """Where the sessions of lathe's data dir `home` live."""
    return home / "sessions"


def project_dir(root: Path, workspace: Path) -> Path:
    """The folder under the sessions root `root` that holds `workspace`'s sessions."""
    return root / project_slug(workspace)


def session_paths(root: Path, workspace: Path | None) -> list[Path]:
    """The session files under `root` of `workspace`, or of every workspace if None."""
    base = root if workspace is None else project_dir(root, workspace)
    pattern = "*/*.jsonl" if workspace is None else "*.jsonl"
    return list(base.glob(pattern)) if base.is_dir() else []


def list_sessions(
    root: Path, workspace: Path | None = None, *, unreadable: dict[Path, Exception] | None = None
) -> list[SessionSummary]:
    """Summaries, latest work first (`SessionSummary.updated`, then the later created),
    of `workspace`'s sessions under `root` (every session if None). Files that cannot be
    read at all (no header, a damaged or newer format: `loader.NewerSessionFormat`) are
    left out, and put into `unreadable` with the error that says why when it is given.
    Only files changed since they were last listed are parsed (`session.index`)."""
    summaries = []
    by_folder: dict[Path, list[Path]] = {}
    for path in session_paths(root, workspace):
        by_folder.setdefault(path.parent, []).append(path)
    for folder, paths in by_folder.items():
        index = SummaryIndex(folder)
        for path in paths:
            try:
                summaries.append(_summary_from(index, path))
            except (UsageError, OSError) as error:
                if unreadable is not None:
                    unreadable[path] = error
        index.save({path.name for path in paths})
    summaries.sort(key=lambda summary: (summary.updated, summary.created), reverse=True)
    return summaries
