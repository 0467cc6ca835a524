"""Older session formats, and one function per step from each to the next.

Migration happens in memory when a file is loaded; a file is rewritten in the current
format only when it is opened for appending (see `SessionStore.open`), so reading an
old session never changes it.

Version 1 (legacy, linear; lathe before the tree format):

    {"version": 1, "id": "…", "cwd": "…", "created": "…", "model": "…"}
    {"ts": "…", "message": {"role": "user", "content": "fix the tests"}}
    {"ts": "…", "message": {"role": "assistant", "content": "…",
                            "tool_calls": [{"id": "c1", "name": "bash", "arguments": "{…}"}]}}
    {"ts": "…", "message": {"role": "tool", "tool_call_id": "c1", "name": "bash",
                            "content": "…", "is_error": false}}

The header has no `type`; entries have no `id`, `parent` or `type` and are chained in
file order; messages were stored with `role`/`content` only (plus the tool-call fields
that tie a result to its call), so an assistant's `content` is its text.

Version 2: version 3 without `settings` on a `model_change` entry (mostly: lathe wrote
it a while before version 3).

Version 3 (current): see `lathe.session.entries`. Its entries read those of version 2
as they are (`READ_AS_CURRENT`): the step changes the header's version alone, and the
loader parses such a file as it parses the current format.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from lathe.session.entries import FORMAT_VERSION

Raw = dict[str, Any]
# (line number in the file, decoded JSON object); steps keep the line numbers so load
# warnings can still point into the file.
RawLines = list[tuple[int, Raw]]
Step = Callable[[Raw, RawLines], tuple[Raw, RawLines]]


def _v1_message(message: Raw) -> Raw:
    role = message.get("role")
    content = message.get("content", "")
    if role == "assistant":
        return {
            "role": "assistant",
            "text": content or "",
            "tool_calls": message.get("tool_calls", []),
        }
    if role == "tool":
        return {
            "role": "tool",
            "tool_call_id": message.get("tool_call_id", ""),
            "name": message.get("name", ""),
            "content": content,
            "is_error": bool(message.get("is_error", False)),
        }
    return {"role": role, "content": content}


def v1_to_v2(header: Raw, lines: RawLines) -> tuple[Raw, RawLines]:
    """Give every entry a type, an id derived from its position, its predecessor as
    parent, and a time (the session's creation where the line has none). Ids are
    deterministic so that forking an old file by entry id is stable."""
    new_header = {**header, "type": "header", "version": 2}
    migrated: RawLines = []
    parent: str | None = None
    for position, (lineno, raw) in enumerate(lines, start=1):
        entry_id = f"{position:08d}"
        entry: Raw = {"type": "message", "id": entry_id, "parent": parent}
        # A line without its time gets the session's: the entries' default, the time of
        # loading, made an old session the latest work of the workspace.
        if "ts" in raw or "created" in header:
            entry["ts"] = raw.get("ts", header.get("created"))
        message = raw.get("message")
        entry["message"] = _v1_message(message) if isinstance(message, dict) else message
        migrated.append((lineno, entry))
        parent = entry_id
    return new_header, migrated


def v2_to_v3(header: Raw, lines: RawLines) -> tuple[Raw, RawLines]:
    """Nothing but the version: version 3 only added a field (`ModelChangeEntry.settings`),
    which the current entries read where a version 2 file has it (lathe wrote it for a
    while before this version)."""
    return {**header, "version": 3}, lines


STEPS: dict[int, Step] = {1: v1_to_v2, 2: v2_to_v3}
READ_AS_CURRENT = frozenset({2})
"""The versions whose entries the current format reads unchanged: only their header
goes through `migrate`."""


def migrate(header: Raw, lines: RawLines) -> tuple[Raw, RawLines]:
    """Apply every step from the header's version up to `FORMAT_VERSION`."""
    version = header.get("version")
    while version != FORMAT_VERSION:
        step = STEPS.get(version) if isinstance(version, int) else None
        if step is None:
            raise ValueError(f"no migration from session format version {version!r}")
        header, lines = step(header, lines)
        version = header["version"]
    return header, lines
