"""The streaming loader follows the crash rules exactly as the whole-file loader did.

Damaged files (torn or unterminated last lines, corrupt, blank and non-object middle
lines, repeated and missing ids, lost parents, bad headers, lines split across read
blocks) load to the same header, entries, warnings in the same order, tail and tail
offset as `whole_file_loader`, or fail with the same error.
"""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Any
from unittest.mock import patch

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from lathe.errors import UsageError
from lathe.session import SessionStore, loader
from lathe.session.entries import (
    ENTRY_ADAPTER,
    CompactionEntry,
    Entry,
    Header,
    LabelEntry,
    MessageEntry,
    RunEndEntry,
)
from lathe.types import AssistantMessage, Thinking, Usage

from . import whole_file_loader
from .helpers import call, reply, result, user

IDS = ["a1", "b2", "c3", "d4", "e5", "f6", ""]  # few, so ids repeat; "" is a missing id


def _entry(kind: int, entry_id: str, parent: str | None) -> Entry:
    common: dict[str, Any] = {"id": entry_id, "parent": parent}
    match kind:
        case 0:
            return MessageEntry(**common, message=user("fix the tests\nplease"))
        case 1:
            message = reply("looking", call("c1", command="pytest -q"), tokens=120)
            thought = dataclasses.replace(message, thinking=(Thinking(text="hm"),))
            return MessageEntry(**common, message=thought)
        case 2:
            return MessageEntry(**common, message=result("c1", "1 failed\n"))
        case 3:
            return CompactionEntry(
                **common, summary="so far", first_kept="c3", tokens_before=9, tokens_after=2
            )
        case 4:
            return RunEndEntry(**common, status="verified", turns=2, usage=Usage(input_tokens=5))
        case _:
            return LabelEntry(**common, text="a fork point")


@st.composite
def entry_lines(draw: st.DrawFn) -> bytes:
    entry = _entry(
        draw(st.integers(0, 5)),
        draw(st.sampled_from(IDS)),
        draw(st.one_of(st.none(), st.sampled_from([*IDS[:-1], "lost"]))),
    )
    data = ENTRY_ADAPTER.dump_python(entry, mode="json")
    if draw(st.booleans()):
        # A line without its defaulted fields, as an older or hand-written file has.
        data = _without(data, draw(st.sets(st.sampled_from(DEFAULTED), min_size=1)))
    return json.dumps(data).encode()


# Fields with defaults at every level of an entry (`ts` aside: its default is "now").
DEFAULTED = ["parent", "origin", "thinking", "is_error", "usage", "cache_read_tokens", "reason"]


def _without(data: Any, keys: set[str]) -> Any:
    if isinstance(data, dict):
        return {k: _without(v, keys) for k, v in data.items() if k not in keys}
    if isinstance(data, list):
        return [_without(item, keys) for item in data]
    return data


garbage = st.binary(max_size=30).filter(lambda raw: b"\n" not in raw)
not_entries = st.sampled_from(
    [b"[1, 2]", b'"text"', b"7", b"null", b"{}", b'{"type": "nope"}', b'{"type": "message"}']
)
blank = st.sampled_from([b"", b" ", b"\t  ", b"\r"])


@st.composite
def middle_lines(draw: st.DrawFn) -> bytes:
    line = draw(entry_lines())
    match draw(st.integers(0, 9)):
        case 0:
            return line[: draw(st.integers(0, len(line) - 1))]  # cut short
        case 1:
            return draw(garbage)
        case 2:
            return draw(not_entries)
        case 3:
            return draw(blank)
        case 4:
            return line + b"\r"  # JSON whitespace: still a whole entry
        case _:
            return line


@st.composite
def tails(draw: st.DrawFn) -> bytes:
    line = draw(entry_lines())
    match draw(st.integers(0, 4)):
        case 0:
            return b""
        case 1:
            return line[: draw(st.integers(1, len(line) - 1))]  # torn mid-write
        case 2:
            return line  # whole, newline missing
        case 3:
            return draw(st.one_of(not_entries, blank, garbage))
        case _:
            return b"\n  "


HEADER = Header(id="5e55107e0000", cwd="/repo", model="m").model_dump_json().encode()
headers = st.sampled_from(
    [
        HEADER,
        HEADER,
        HEADER,
        b"",
        b'{"type": "header", "version": 2, "id": "x"',
        b'{"version": 2, "id": "x"}',  # readable but invalid
        b'{"version": 9, "id": "x", "cwd": "/", "model": "m"}',
        b'{"version": 1, "id": "0ld5e5510000", "cwd": "/repo", "created": "2024-03-01T10:00:00Z", '
        b'"model": "m"}',
        b"[]",
    ]
)


@st.composite
def session_files(draw: st.DrawFn) -> bytes:
    lines = [draw(headers), *draw(st.lists(middle_lines(), max_size=12))]
    if draw(st.booleans()):
        lines.insert(0, draw(blank))
    return b"".join(line + b"\n" for line in lines) + draw(tails())


def _outcome(load: Any, path: Path) -> Any:
    try:
        loaded = load(path)
    except UsageError as error:
        return ("refused", str(error))
    return (
        loaded.header,
        loaded.entries,
        loaded.warnings,
        loaded.version,
        str(loaded.tail),
        loaded.tail_offset,
    )


@pytest.fixture(scope="module")
def scratch(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("damaged") / "s.jsonl"


@settings(max_examples=200, deadline=None)
@given(data=session_files(), block=st.sampled_from([1, 2, 5, 16, 1 << 20]))
def test_streaming_load_matches_the_whole_file_loader(
    scratch: Path, data: bytes, block: int
) -> None:
    scratch.write_bytes(data)
    expected = _outcome(whole_file_loader.load_file, scratch)
    with patch.object(loader, "_BLOCK", block):
        assert _outcome(loader.load_file, scratch) == expected


def test_a_repeated_id_is_skipped_and_its_children_join_the_first(
    store: SessionStore, workspace: Path
) -> None:
    with store.create(workspace, "m") as session:
        first = session.append_message(user("one"))
    again = MessageEntry(id=first.id, message=user("one, written twice"))
    child = MessageEntry(id="0c0c0c0c", parent=first.id, message=reply("two"))
    with session.path.open("ab") as handle:
        handle.write(b"".join(ENTRY_ADAPTER.dump_json(e) + b"\n" for e in (again, child)))

    loaded = store.open(session.id, readonly=True)
    assert list(loaded.entries) == [first, child]
    assert loaded.warnings == ["line 3: entry with a missing or repeated id skipped"]


def test_warnings_keep_their_order_torn_tail_then_corrupt_lines_then_repairs(
    store: SessionStore, workspace: Path
) -> None:
    with store.create(workspace, "m") as session:
        entries = [session.append_message(user(f"message {n}")) for n in range(5)]
    lines = session.path.read_bytes().split(b"\n")
    lines[2] = b"{not json"  # message 1
    lines[4] = b'{"type": "label"}'  # message 3
    session.path.write_bytes(b"\n".join(lines) + b'{"type": "mess')

    loaded = store.open(session.id, readonly=True)
    assert [entry.id for entry in loaded.entries] == [entries[n].id for n in (0, 2, 4)]
    assert [warning.split(":")[0] for warning in loaded.warnings] == [
        "line 7",  # the torn tail
        "line 3",
        "line 5",
        "line 4",  # message 2 lost its parent
        "line 6",
    ]
    assert "torn last line skipped (14 bytes" in loaded.warnings[0]
    assert f"attached to {entries[0].id} instead" in loaded.warnings[3]
    assert f"attached to {entries[2].id} instead" in loaded.warnings[4]


def test_loaded_entries_and_the_values_inside_them_hold_no_instance_dict(
    store: SessionStore, workspace: Path
) -> None:
    # A long session holds hundreds of thousands of these: a `__dict__` each would
    # be most of its memory.
    with store.create(workspace, "m") as session:
        session.append_message(user("go"))
        thought = dataclasses.replace(
            reply("looking", call("c1", command="pytest -q"), tokens=120),
            thinking=(Thinking(text="hm"),),
        )
        session.append_message(thought)
        session.append_message(result("c1", "output"))
        session.append(RunEndEntry(status="verified", turns=1, usage=Usage(input_tokens=5)))
    entries = store.open(session.id, readonly=True).entries
    first, second, third, _ = entries
    assert isinstance(second, MessageEntry) and isinstance(second.message, AssistantMessage)
    assert isinstance(first, MessageEntry) and isinstance(third, MessageEntry)
    reply_message = second.message
    values = [
        *entries,
        first.message,
        reply_message,
        *reply_message.tool_calls,
        *reply_message.thinking,
        reply_message.usage,
        third.message,
    ]

    assert not [value for value in values if hasattr(value, "__dict__")]
    with pytest.raises(dataclasses.FrozenInstanceError):
        second.parent = "elsewhere"  # type: ignore[misc]
    moved = dataclasses.replace(second, parent="elsewhere")
    assert (moved.parent, second.parent) == ("elsewhere", first.id)
