"""A session's summary (title, turns, tokens, entries, how it ended) from its entries: what
`session.listing` computes for a file the index cannot answer. Kept apart so that the
listing imports the entry models only when a file must be read."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from lathe.session.appended import moment, title_of
from lathe.session.entries import (
    FORMAT_VERSION,
    Entry,
    Header,
    MessageEntry,
    RunEndEntry,
)
from lathe.session.loader import Tail, load_file
from lathe.types import AssistantMessage, UserMessage


def _ended_status(entries: Sequence[Entry]) -> str:
    """A run's end describes the session only if no message came after it: a resumed
    run that then crashed must not show the earlier run's status. (A held lock, which
    means a run is appending now, is "running": checked live, never cached.)"""
    for entry in reversed(entries):
        if isinstance(entry, RunEndEntry):
            return entry.status
        if isinstance(entry, MessageEntry):
            break
    return "unfinished"


def _counts(entries: Sequence[Entry]) -> dict[str, Any]:
    """The title (first line of the first user message), turns, tokens and entries of a
    session.

    Its tokens are what its runs spent: each run's end counts its replies, its
    compaction's summary requests and its subagents (what `sessions show` and `lathe
    stats` count; the replies alone left the summaries out), and the replies no end
    follows yet count by themselves (`open_tokens`: a run going on, or killed). Where the
    replies before an end add up to more than it says (a killed run's, then the end of
    the run that went on with it), they count instead."""
    title = ""
    turns = ended = open_tokens = 0
    for entry in entries:
        if isinstance(entry, RunEndEntry):
            ended += max(entry.usage.total, open_tokens)
            open_tokens = 0
        if not isinstance(entry, MessageEntry):
            continue
        message = entry.message
        if isinstance(message, UserMessage) and not title:
            title = title_of(message.content)
        elif isinstance(message, AssistantMessage):
            turns += 1
            open_tokens += message.usage.total
    return {
        "title": title,
        "turns": turns,
        "tokens": ended + open_tokens,
        "open_tokens": open_tokens,
        "entries": len(entries),
    }


def of_entries(header: Header, entries: Sequence[Entry]) -> dict[str, Any]:
    """The summary of a session file that loads to `header` and `entries`; `last` is
    when it was last worked in (`listing.SessionSummary.updated`)."""
    return {
        "id": header.id,
        "created": header.created.isoformat(),
        "last": moment(entries[-1].ts if entries else header.created),
        "cwd": header.cwd,
        "parent_session": header.parent_session,
        "parent_call": header.parent_call,
        **_counts(entries),
        "ended": _ended_status(entries),
    }


def whole(path: Path) -> tuple[dict[str, Any], bool]:
    """The summary of `path` from a full parse (its crash rules included), and whether a
    later listing may extend it from appended lines alone: a clean file of this format."""
    loaded = load_file(path)
    clean = loaded.version == FORMAT_VERSION and loaded.tail is Tail.CLEAN
    return of_entries(loaded.header, loaded.entries), clean and not loaded.warnings
