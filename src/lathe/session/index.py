"""A cache of session summaries, so `lathe sessions list` reads only what changed.

One `.index.json` per project folder maps a session file's name to its summary and the
file's (size, mtime_ns, inode) when it was summarised. A summary whose file still has
those is used as it is. A file that only grew since — the same inode, longer, and the
bytes before the old end as they were (a digest of the last 4 KiB of them is kept) — has
only its new lines read (`grown`); any other file is parsed in full by the loader (with
its crash rules: torn last line, corrupt middle line) and its entry replaced. The index is never
the only copy of anything: a missing, stale, corrupt or unwritable one costs a parse,
nothing else. Whether a run holds the session now ("running") is never cached.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
from pathlib import Path
from typing import Any

from lathe.atomic_write import write_atomic
from lathe.home import private_folder

INDEX_NAME = ".index.json"
_VERSION = 5  # 4: a summary counts its entries; 5: every kind of token, a title cut short
_DIGEST_BYTES = 4096


def end_digest(path: Path, size: int) -> str | None:
    """A digest of the bytes just before `size`, or None unless they end a whole line."""
    start = max(size - _DIGEST_BYTES, 0)
    try:
        with path.open("rb") as handle:
            handle.seek(start)
            data = handle.read(size - start)
    except OSError:
        return None
    if len(data) != size - start or not data.endswith(b"\n"):
        return None
    return hashlib.blake2b(data, digest_size=16).hexdigest()


def file_key(stat: os.stat_result) -> list[int]:
    return [stat.st_size, stat.st_mtime_ns, stat.st_ino]


class SummaryIndex:
    """The cached summaries of one project folder's sessions."""

    def __init__(self, folder: Path) -> None:
        self._path = folder / INDEX_NAME
        self._entries: dict[str, dict[str, Any]] = self._read()
        self._changed = False

    def get(self, path: Path, stat: os.stat_result) -> dict[str, Any] | None:
        """The cached summary fields of `path`, when the file is as it was then."""
        entry = self._entries.get(path.name)
        if entry is None or entry.get("key") != file_key(stat):
            return None
        return entry

    def grown(self, path: Path, stat: os.stat_result) -> tuple[dict[str, Any], int] | None:
        """(the cached fields, the size they cover) when `path` only grew since they were
        cached, so that reading what follows that size brings them up to date."""
        entry = self._entries.get(path.name)
        if entry is None or not entry.get("end"):
            return None
        size, _, inode = entry.get("key", (0, 0, 0))
        if inode != stat.st_ino or not 0 < size < stat.st_size:
            return None
        if end_digest(path, size) != entry["end"]:
            return None
        return entry, size

    def put(
        self, path: Path, stat: os.stat_result, fields: dict[str, Any], *, growable: bool
    ) -> None:
        """Cache `fields` for `path` as `stat` found it; `growable` when they may later be
        extended by reading only what is appended (`grown`)."""
        end = end_digest(path, stat.st_size) if growable else None
        self._entries[path.name] = {**fields, "key": file_key(stat), "end": end}
        self._changed = True

    def save(self, present: set[str] | None = None) -> None:
        """Write the index back if it changed, keeping only the files in `present` (all
        of them when None)."""
        stale = set(self._entries) - present if present is not None else set()
        if not (self._changed or stale):
            return
        for name in stale:
            del self._entries[name]
        data = json.dumps({"version": _VERSION, "sessions": self._entries}, default=str)
        # A cache lathe cannot write is a parse next time, nothing more.
        with contextlib.suppress(OSError):
            private_folder(self._path.parent)  # one an older lathe left open to all
            write_atomic(self._path, data.encode(), mode=0o600)  # titles, workspaces

    def _read(self) -> dict[str, dict[str, Any]]:
        try:
            data = json.loads(self._path.read_bytes())
        except (OSError, ValueError):
            return {}
        if not isinstance(data, dict) or data.get("version") != _VERSION:
            return {}
        sessions = data.get("sessions")
        return sessions if isinstance(sessions, dict) else {}
