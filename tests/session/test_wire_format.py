"""The bytes of a session file, pinned: every entry type, every field, in the order and
spelling lathe wrote them when entries were pydantic models. A change here is a change
of the session format (a new version with a migration step), never a side effect of how
the entry types are built."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

from lathe.session import (
    ApprovalEntry,
    CheckpointEntry,
    CompactionEntry,
    LabelEntry,
    MessageEntry,
    ModelChangeEntry,
    RunEndEntry,
    SessionStore,
)
from lathe.session.entries import Entry, Header
from lathe.types import (
    AssistantMessage,
    StopReason,
    Thinking,
    ToolCall,
    ToolResultMessage,
    Usage,
    UserMessage,
)

TS = datetime(2025, 1, 2, 3, 4, 5, 678901, tzinfo=UTC)

ENTRIES: list[Entry] = [
    MessageEntry(
        id="a1", ts=TS, message=UserMessage(content='fix the tests\nplease "now" é', origin="lathe")
    ),
    MessageEntry(
        id="b2",
        ts=TS,
        message=AssistantMessage(
            text="looking",
            thinking=(Thinking(text="hm", signature="sig", provider="anthropic"),),
            tool_calls=(ToolCall(id="c1", name="bash", arguments='{"command": "pytest -q"}'),),
            stop_reason=StopReason.TOOL_USE,
            usage=Usage(
                input_tokens=120, output_tokens=12, cache_read_tokens=3, cache_write_tokens=4
            ),
            model="test-model",
        ),
    ),
    MessageEntry(
        id="c3",
        ts=TS,
        message=ToolResultMessage(
            tool_call_id="c1", name="bash", content="1 failed\n", is_error=True
        ),
    ),
    CompactionEntry(
        id="d4", ts=TS, summary="so far", first_kept="c3", tokens_before=9, tokens_after=2
    ),
    CheckpointEntry(id="e5", ts=TS, ref="abc", turn=3),
    ModelChangeEntry(id="f6", ts=TS, provider="openai", model="gpt"),
    LabelEntry(id="g7", ts=TS, text="a fork point"),
    ApprovalEntry(id="h8", ts=TS, rule="bash:pytest", decision="allow"),
    RunEndEntry(
        id="i9", ts=TS, status="verified", turns=2, usage=Usage(input_tokens=5), reason="done"
    ),
]

_T = '"ts":"2025-01-02T03:04:05.678901Z"'
LINES = [
    '{"id":"a1","parent":null,' + _T + ',"type":"message","message":{"role":"user",'
    '"content":"fix the tests\\nplease \\"now\\" é","origin":"lathe"}}',
    '{"id":"b2","parent":"a1",' + _T + ',"type":"message","message":{"role":"assistant",'
    '"text":"looking","thinking":[{"text":"hm","signature":"sig","provider":"anthropic"}],'
    '"tool_calls":[{"id":"c1","name":"bash","arguments":"{\\"command\\": \\"pytest -q\\"}"}],'
    '"stop_reason":"tool_use","usage":{"input_tokens":120,"output_tokens":12,'
    '"cache_read_tokens":3,"cache_write_tokens":4},"model":"test-model"}}',
    '{"id":"c3","parent":"b2",' + _T + ',"type":"message","message":{"role":"tool",'
    '"tool_call_id":"c1","name":"bash","content":"1 failed\\n","is_error":true}}',
    '{"id":"d4","parent":"c3",' + _T + ',"type":"compaction","summary":"so far",'
    '"first_kept":"c3","tokens_before":9,"tokens_after":2}',
    '{"id":"e5","parent":"d4",' + _T + ',"type":"checkpoint","ref":"abc","turn":3}',
    '{"id":"f6","parent":"e5",' + _T + ',"type":"model_change","provider":"openai","model":"gpt"}',
    '{"id":"g7","parent":"f6",' + _T + ',"type":"label","text":"a fork point"}',
    '{"id":"h8","parent":"g7",' + _T + ',"type":"approval","rule":"bash:pytest",'
    '"decision":"allow"}',
    '{"id":"i9","parent":"h8",' + _T + ',"type":"run_end","status":"verified","turns":2,'
    '"usage":{"input_tokens":5,"output_tokens":0,"cache_read_tokens":0,'
    '"cache_write_tokens":0},"reason":"done"}',
]

HEADER_LINE = (
    '{"type":"header","version":3,"id":"5e55107e0000","cwd":"/repo",'
    '"created":"2025-01-02T03:04:05.678901Z","model":"m","parent_session":null,'
    '"parent_entry":null}'
)


def _body(path: Path) -> list[str]:
    return path.read_text(encoding="utf-8").splitlines()[1:]


def test_appended_entries_are_written_byte_for_byte_as_pinned(
    store: SessionStore, workspace: Path
) -> None:
    with store.create(workspace, "m") as session:
        stored = [session.append(entry) for entry in ENTRIES]

    assert _body(session.path) == LINES
    assert list(store.open(session.id, readonly=True).entries) == stored


def test_a_rewritten_file_keeps_the_pinned_bytes(store: SessionStore, workspace: Path) -> None:
    with store.create(workspace, "m") as session:
        for entry in ENTRIES:
            session.append(entry)
    with store.fork(session.id) as fork:
        pass

    assert _body(fork.path) == LINES


def test_the_header_line_is_pinned() -> None:
    header = Header(id="5e55107e0000", cwd="/repo", model="m", created=TS)

    assert header.model_dump_json() == HEADER_LINE
