"""The events of one served session, numbered, in a file beside its session file.

`<ts>_<id>.events` holds one line per event, `{"id": N, "event": {...}}`, where the
event is the object `lathe run --json` prints and N counts from 1 over every run the
session has had. A client that reconnects with `Last-Event-ID: N` is sent everything
after N from this file, whatever happened in between (a server restart included), then
the live events. Lines are written whole with one `write` and not fsynced: the session
file is the durable record of the conversation; a crash may cost this file its last
lines, never a session. A torn last line is cut off when the journal is opened again.
"""

from __future__ import annotations

import os
from collections.abc import Collection, Iterator
from pathlib import Path

JOURNAL_SUFFIX = ".events"
_TAIL_BYTES = 1 << 16


def journal_path(session_path: Path) -> Path:
    """`<ts>_<id>.jsonl` -> `<ts>_<id>.events` (not `.jsonl`: the session store treats
    every `*.jsonl` as a session)."""
    return session_path.with_suffix(JOURNAL_SUFFIX)


class EventJournal:
    def __init__(self, path: Path) -> None:
        self.path = path
        self.last_id = _repair_and_count(path)
        self._fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)

    def append(self, event_json: str) -> int:
        """Write one event (its JSON text); its id."""
        self.last_id += 1
        line = f'{{"id":{self.last_id},"event":{event_json}}}\n'
        os.write(self._fd, line.encode("utf-8", "surrogateescape"))
        return self.last_id

    def page(self, last_seen: int, limit: int = 5_000) -> list[tuple[int, str]]:
        """At most `limit` events after `last_seen`, oldest first (read in a thread by
        the server, so a long replay does not hold up its loop)."""
        found: list[tuple[int, str]] = []
        for item in self.after(last_seen):
            found.append(item)
            if len(found) >= limit:
                break
        return found

    def after(self, last_seen: int) -> Iterator[tuple[int, str]]:
        """(id, event JSON) of every event after `last_seen`, oldest first."""
        if last_seen >= self.last_id:
            return
        with open(self.path, "rb") as file:
            for raw in file:
                number, event = _split(raw)
                if number is not None and number > last_seen:
                    yield number, event

    def unfinished_run(self, kinds: Collection[str]) -> list[str] | None:
        """The events of `kinds` (their JSON, oldest first) of the last run when the
        journal has its `run_started` and no `run_finished` after it: the server died
        during it (kill -9). None when the last run ended or none began. Reads back from
        the end only as far as that run's start."""
        found: list[str] = []
        for raw in self._backwards():
            number, event = _split(raw)
            kind = _kind(event) if number is not None else ""
            if kind == "run_finished":
                return None
            if kind in kinds:
                found.append(event)
            if kind == "run_started":
                return found[::-1]
        return None

    def _backwards(self) -> Iterator[bytes]:
        """The whole lines of the file, last first, a block at a time."""
        with open(self.path, "rb") as file:
            position = file.seek(0, os.SEEK_END)
            part = b""  # the start of a line whose beginning is in an earlier block
            while position > 0:
                step = min(_TAIL_BYTES, position)
                position -= step
                file.seek(position)
                lines = (file.read(step) + part).split(b"\n")
                part = lines.pop(0) if position else b""
                for line in reversed(lines):
                    if line:
                        yield line + b"\n"

    def close(self) -> None:
        if self._fd >= 0:
            os.close(self._fd)
            self._fd = -1


def _split(raw: bytes) -> tuple[int | None, str]:
    """A line's id and event JSON, without parsing the event; (None, "") for a line not
    in the journal's form."""
    prefix = b'{"id":'
    if not raw.startswith(prefix) or not raw.endswith(b"}\n"):
        return None, ""
    comma = raw.find(b",", len(prefix))
    if comma < 0 or raw[comma : comma + 9] != b',"event":':
        return None, ""
    try:
        number = int(raw[len(prefix) : comma])
    except ValueError:
        return None, ""
    return number, raw[comma + 9 : -2].decode("utf-8", "surrogateescape")


def _kind(event: str) -> str:
    """An event's type, read from the start of its JSON: each event declares `type`
    first, so its JSON begins with it."""
    prefix = '{"type":"'
    return event[len(prefix) : event.find('"', len(prefix))] if event.startswith(prefix) else ""


def _repair_and_count(path: Path) -> int:
    """The id of the last whole line (0 for a new journal), after cutting a torn last
    line off. Reads only the file's tail unless a line is longer than it."""
    try:
        size = path.stat().st_size
    except FileNotFoundError:
        return 0
    with open(path, "rb+") as file:
        start = max(0, size - _TAIL_BYTES)
        file.seek(start)
        tail = file.read()
        if start and tail.count(b"\n") < 2:
            file.seek(0)
            start, tail = 0, file.read()
        end = tail.rfind(b"\n") + 1
        if start + end < size:
            file.truncate(start + end)
        lines = tail[:end].splitlines(keepends=True)
    for raw in reversed(lines):
        number, _ = _split(raw)
        if number is not None:
            return number
    return 0
