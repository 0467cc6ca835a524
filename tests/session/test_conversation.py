from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from lathe.errors import UsageError
from lathe.session import (
    INTERRUPTED_RESULT,
    CompactionEntry,
    Entry,
    LabelEntry,
    MessageEntry,
    SessionStore,
    apply_compaction,
    repair_dangling_tool_calls,
)
from lathe.types import AssistantMessage, Message, ToolResultMessage, UserMessage

from .helpers import call, reply, result, user


def interrupted(call_id: str, name: str = "bash") -> ToolResultMessage:
    return ToolResultMessage(
        tool_call_id=call_id, name=name, content=INTERRUPTED_RESULT, is_error=True
    )


def test_messages_follow_the_branch_to_the_current_leaf(
    store: SessionStore, workspace: Path
) -> None:
    with store.create(workspace, "m") as session:
        task = session.append_message(user("task"))
        first = session.append_message(reply("first try"))
        session.append_message(user("no, the other file"))
        session.set_leaf(task.id[:5])
        session.append(LabelEntry(text="second attempt"))
        session.append_message(reply("second try"))
        assert session.messages() == [user("task"), reply("second try")]
        assert session.messages(leaf=first.id) == [user("task"), reply("first try")]

    reloaded = store.open(session.id, readonly=True)
    assert reloaded.messages() == [user("task"), reply("second try")]
    assert len(reloaded.entries) == 5


def test_the_latest_compaction_replaces_what_came_before_first_kept() -> None:
    entries: list[Entry] = [
        MessageEntry(id="e1", message=user("task")),
        MessageEntry(id="e2", parent="e1", message=reply("a")),
        CompactionEntry(
            id="c1", parent="e2", summary="old", first_kept="e2", tokens_before=1, tokens_after=1
        ),
        MessageEntry(id="e3", parent="c1", message=user("more")),
        MessageEntry(id="e4", parent="e3", message=reply("b")),
        CompactionEntry(
            id="c2",
            parent="e4",
            summary="summary",
            first_kept="e3",
            tokens_before=9,
            tokens_after=2,
        ),
        MessageEntry(id="e5", parent="c2", message=user("after")),
    ]
    assert apply_compaction(entries) == [
        UserMessage(content="summary"),
        user("more"),
        reply("b"),
        user("after"),
    ]
    assert apply_compaction(entries[:2]) == [user("task"), reply("a")]


def test_dangling_calls_get_an_interrupted_result_after_the_real_ones() -> None:
    conversation: list[Message] = [
        user("task"),
        reply("", call("c1"), call("c2"), call("c3", "read", path="a.py")),
        result("c2", "done"),
        user("next"),
        reply("", call("c4")),
    ]
    repaired, added = repair_dangling_tool_calls(conversation)
    assert repaired == [
        user("task"),
        conversation[1],
        result("c2", "done"),
        interrupted("c1"),
        interrupted("c3", "read"),
        user("next"),
        conversation[4],
        interrupted("c4"),
    ]
    assert added == [interrupted("c1"), interrupted("c3", "read"), interrupted("c4")]
    assert repair_dangling_tool_calls(repaired) == (repaired, [])


def test_resume_after_a_crash_mid_tool_closes_the_call_in_the_file(
    store: SessionStore, workspace: Path
) -> None:
    with store.create(workspace, "m") as session:
        session.append_message(user("task"))
        session.append_message(reply("", call("c1"), call("c2")))
        session.append_message(result("c1"))
    # The process died here, before c2's result was written.

    with store.open(session.id) as resumed:
        assert resumed.conversation()[-1] == interrupted("c2")
        assert resumed.close_dangling_tool_calls() == [interrupted("c2")]
        assert resumed.close_dangling_tool_calls() == []
    reloaded = store.open(session.id, readonly=True)
    assert reloaded.messages()[-2:] == [result("c1"), interrupted("c2")]
    assert reloaded.conversation() == reloaded.messages()


def test_dangling_call_in_the_middle_is_repaired_in_memory_only(
    store: SessionStore, workspace: Path
) -> None:
    with store.create(workspace, "m") as session:
        session.append_message(user("task"))
        session.append_message(reply("", call("c1")))
        session.append_message(user("carry on"))
        assert session.close_dangling_tool_calls() == []
        assert session.conversation() == [
            user("task"),
            reply("", call("c1")),
            interrupted("c1"),
            user("carry on"),
        ]


@st.composite
def conversations(draw: st.DrawFn) -> tuple[list[Message], int]:
    """Assistant turns with tool calls, some results missing and the rest shuffled."""
    messages: list[Message] = [user("task")]
    dropped = 0
    for turn in range(draw(st.integers(0, 6))):
        ids = [f"t{turn}c{n}" for n in range(draw(st.integers(0, 4)))]
        messages.append(reply(f"turn {turn}", *(call(i) for i in ids)))
        kept = draw(st.lists(st.sampled_from(ids), unique=True)) if ids else []
        dropped += len(ids) - len(kept)
        messages.extend(result(i) for i in kept)
        if draw(st.booleans()):
            messages.append(user(f"after {turn}"))
    return messages, dropped


@given(conversations())
def test_every_repaired_call_is_followed_by_exactly_its_results(
    case: tuple[list[Message], int],
) -> None:
    messages, dropped = case
    repaired, added = repair_dangling_tool_calls(messages)
    assert len(added) == dropped
    assert [m for m in repaired if m not in added] == messages
    for index, message in enumerate(repaired):
        if isinstance(message, AssistantMessage) and message.tool_calls:
            follow = repaired[index + 1 : index + 1 + len(message.tool_calls)]
            assert all(isinstance(m, ToolResultMessage) for m in follow)
            assert {m.tool_call_id for m in follow if isinstance(m, ToolResultMessage)} == {
                c.id for c in message.tool_calls
            }


@given(conversations(), st.data())
def test_a_result_whose_call_was_lost_is_dropped(case, data) -> None:
    # A corrupt line can take an assistant message and leave its results behind.
    messages, _ = case
    lost = data.draw(st.sets(st.integers(0, max(0, len(messages) - 1))))
    damaged = [m for i, m in enumerate(messages) if i not in lost]
    repaired, _ = repair_dangling_tool_calls(damaged)
    calls: set[str] = set()
    for message in repaired:
        if isinstance(message, AssistantMessage):
            calls = {c.id for c in message.tool_calls}
        elif isinstance(message, ToolResultMessage):
            assert message.tool_call_id in calls
            calls.discard(message.tool_call_id)
        else:
            calls = set()


@pytest.fixture
def original(store: SessionStore, workspace: Path) -> list[MessageEntry]:
    with store.create(workspace, "m") as session:
        return [
            session.append_message(user("task")),
            session.append_message(reply("", call("c1", command="ls"))),
            session.append_message(result("c1", "a.py")),
            session.append_message(reply("done")),
            session.append_message(user("now also b")),
            session.append_message(reply("ok")),
        ]


def test_fork_at_an_entry_continues_from_there_and_leaves_the_original_alone(
    store: SessionStore, workspace: Path, original: list[MessageEntry]
) -> None:
    source = store.latest(workspace, readonly=True)
    assert source is not None
    before = source.path.read_bytes()
    at = original[3]

    with store.fork(source.id, at.id[:6]) as forked:
        assert forked.id != source.id
        assert forked.header.parent_session == source.id
        assert forked.header.parent_entry == at.id
        assert forked.header.cwd == source.header.cwd
        assert list(forked.entries) == original[:4]
        assert forked.messages() == source.messages()[:4]
        added = forked.append_message(user("instead, do c"))
        assert added.parent == at.id

    assert source.path.read_bytes() == before
    reloaded = store.open(forked.id, readonly=True)
    assert reloaded.messages() == [*source.messages()[:4], user("instead, do c")]
    assert reloaded.path.parent == source.path.parent


def test_fork_defaults_to_the_leaf(store: SessionStore, original: list[MessageEntry]) -> None:
    source_id = store.list(None)[0].id
    with store.fork(source_id) as forked:
        assert list(forked.entries) == original
        assert forked.header.parent_entry == original[-1].id


def test_fork_at_an_unknown_entry_is_a_usage_error(
    store: SessionStore, original: list[MessageEntry]
) -> None:
    source_id = store.list(None)[0].id
    with pytest.raises(UsageError, match=r"has no entry starting with 'zzz'"):
        store.fork(source_id, "zzz")
    assert len(store.list(None)) == 1
