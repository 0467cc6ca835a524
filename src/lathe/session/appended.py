"""Bringing a listed session's summary up to date from the lines appended since, read as
plain JSON: `lathe sessions list` after a run that is still going (or was killed) then
loads no entry models. Only the listing reads this way; loading a session still
validates every line under the crash rules (`session.loader`).

The counts mirror `session.summarise`: the title is the first line of the first user
message (`title_of`), a turn is an assistant message, the tokens are what the runs' ends
say they spent plus the replies no end follows yet (every kind a usage counts,
`Usage.total`), each line is an entry, the session's end is a run's end that no message
followed, and its last work is the last line's time."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

TITLE_CHARS = 1_000  # a one-line task of 1.5 MB had made a 1.5 MB index


def title_of(task: str) -> str:
    """A session's title: the first line of its first user message, cut short."""
    line = next(iter(task.strip().splitlines()), "")
    return line if len(line) <= TITLE_CHARS else line[: TITLE_CHARS - 1] + "…"


def moment(when: datetime) -> str:
    """`when` as a summary keeps it: ISO 8601, UTC when it says no zone (a hand-made
    file), so that every summary's times compare."""
    return (when if when.tzinfo else when.replace(tzinfo=UTC)).isoformat()


def grown(path: Path, fields: dict[str, Any], start: int, end: int) -> dict[str, Any] | None:
    """`fields` (a summary of the file up to `start`) with the whole lines between
    `start` and `end` counted in; None when any of them is not a whole JSON entry line,
    which leaves the file to the full parse and its crash rules."""
    with path.open("rb") as handle:
        handle.seek(start)
        data = handle.read(end - start)
    if len(data) != end - start or not data.endswith(b"\n"):
        return None
    title, turns, ended = fields["title"], fields["turns"], None
    open_tokens = fields["open_tokens"]
    spent = fields["tokens"] - open_tokens  # by the runs that ended
    lines = data[:-1].split(b"\n")
    entry: dict[str, Any] = {}
    for line in lines:
        entry = _entry(line)
        if entry is None:
            return None
        if entry["type"] == "run_end":
            ended = entry["status"]
            spent += max(sum(entry.get("usage", {}).values()), open_tokens)
            open_tokens = 0
        elif entry["type"] == "message":
            message = entry["message"]
            ended = "unfinished"
            if message["role"] == "user" and not title:
                title = title_of(message["content"])
            elif message["role"] == "assistant":
                turns += 1
                open_tokens += sum(message.get("usage", {}).values())  # as Usage.total
    try:
        last = moment(datetime.fromisoformat(entry["ts"]))
    except ValueError:
        return None
    return {
        **fields,
        "last": last,
        "title": title,
        "turns": turns,
        "tokens": spent + open_tokens,
        "open_tokens": open_tokens,
        "entries": fields["entries"] + len(lines),
        "ended": fields["ended"] if ended is None else ended,
    }


_KINDS = frozenset(
    {"message", "compaction", "checkpoint", "model_change", "label", "approval", "run_end"}
)
_ROLES = frozenset({"user", "assistant", "tool"})


def _entry(line: bytes) -> dict[str, Any] | None:
    """The line as an entry with what the counts read in place; None for anything else
    (not JSON, an unknown type, no time, a message without its role or text, token
    counts that are not numbers), which the full parse then judges."""
    try:
        entry = json.loads(line)
    except ValueError:
        return None
    if not isinstance(entry, dict) or entry.get("type") not in _KINDS:
        return None
    if not isinstance(entry.get("id"), str) or not isinstance(entry.get("ts"), str):
        return None
    if entry["type"] == "run_end":
        if not isinstance(entry.get("status"), str):
            return None
        return entry if _counted(entry.get("usage", {})) else None
    if entry["type"] != "message":
        return entry
    message = entry.get("message")
    if not isinstance(message, dict) or message.get("role") not in _ROLES:
        return None
    if message["role"] == "user" and not isinstance(message.get("content"), str):
        return None
    return entry if _counted(message.get("usage", {})) else None


def _counted(usage: object) -> bool:
    """Whether `usage` is token counts the sums can add: an object of whole numbers."""
    return isinstance(usage, dict) and all(type(n) is int for n in usage.values())
