from __future__ import annotations

import gc
import json
import os
from datetime import UTC, datetime
from pathlib import Path

import pytest

from lathe.errors import UsageError
from lathe.home import project_slug
from lathe.session import (
    ENTRY_ADAPTER,
    FORMAT_VERSION,
    ApprovalEntry,
    CheckpointEntry,
    CompactionEntry,
    LabelEntry,
    MessageEntry,
    ModelChangeEntry,
    RunEndEntry,
    SessionStore,
)
from lathe.types import Usage

from .helpers import call, reply, result, user


def test_append_and_load_round_trip(store: SessionStore, workspace: Path) -> None:
    with store.create(workspace, "test-model") as session:
        written = [
            session.append_message(user("fix the failing test")),
            session.append(CheckpointEntry(ref="snap-1", turn=1)),
            session.append_message(
                reply("running it", call("c1", command="pytest -q"), tokens=100)
            ),
            session.append_message(result("c1", "1 failed")),
            session.append(ModelChangeEntry(provider="openai", model="gpt-x")),
            session.append(LabelEntry(text="before the fix")),
            session.append(ApprovalEntry(rule="bash:pytest", decision="allow")),
            session.append(
                CompactionEntry(summary="s", first_kept="x", tokens_before=9, tokens_after=1)
            ),
            session.append(RunEndEntry(status="verified", turns=1, usage=Usage(input_tokens=5))),
        ]
        header = session.header

    loaded = store.open(header.id, readonly=True)
    assert loaded.header == header
    assert list(loaded.entries) == written
    assert loaded.warnings == []
    assert loaded.leaf == written[-1].id
    assert [entry.parent for entry in written] == [None, *(entry.id for entry in written[:-1])]
    assert len({entry.id for entry in written}) == len(written)


@pytest.mark.parametrize("readonly", [False, True])
def test_an_opened_session_is_left_out_of_the_collectors_passes(
    store: SessionStore, workspace: Path, readonly: bool
) -> None:
    # Otherwise the next collections would each walk every loaded entry again.
    with store.create(workspace, "m") as session:
        session.append_message(user("go"))
        session.append_message(reply("done"))
    try:
        with store.open(session.id, readonly=readonly) as opened:
            walked = {id(value) for value in gc.get_objects()}
            entries = [*opened.entries, *(entry.message for entry in opened.entries)]
            assert not [value for value in entries if id(value) in walked]
    finally:
        gc.unfreeze()


def test_file_layout_and_header_line(store: SessionStore, workspace: Path, home: Path) -> None:
    with store.create(workspace, "test-model") as session:
        session.append_message(user("hello"))
    path = session.path
    assert path.parent == home / "sessions" / project_slug(workspace)
    assert path.name.endswith(f"_{session.id}.jsonl")
    first, second = path.read_text().splitlines()
    header = json.loads(first)
    assert header["type"] == "header"
    assert header["version"] == FORMAT_VERSION == 3
    assert header["cwd"] == str(workspace.resolve())
    assert header["model"] == "test-model"
    assert json.loads(second)["message"] == {"role": "user", "content": "hello", "origin": "user"}


def test_read_only_session_refuses_to_append(store: SessionStore, workspace: Path) -> None:
    with store.create(workspace, "m") as session:
        session.append_message(user("hi"))
    snapshot = store.open(session.id, readonly=True)
    with pytest.raises(RuntimeError, match="read-only"):
        snapshot.append_message(user("more"))


def test_torn_last_line_is_skipped_with_a_warning_and_cut_before_appending(
    store: SessionStore, workspace: Path
) -> None:
    with store.create(workspace, "m") as session:
        kept = [session.append_message(user("one")), session.append_message(reply("two"))]
    with session.path.open("ab") as handle:
        handle.write(b'{"type":"message","id":"deadbeef","parent":"')

    loaded = store.open(session.id, readonly=True)
    assert list(loaded.entries) == kept
    assert len(loaded.warnings) == 1
    assert "line 4: torn last line skipped" in loaded.warnings[0]

    with store.open(session.id) as resumed:
        added = resumed.append_message(user("three"))
    again = store.open(session.id, readonly=True)
    assert again.warnings == []
    assert list(again.entries) == [*kept, added]
    assert added.parent == kept[-1].id


def test_whole_last_line_without_newline_is_kept(store: SessionStore, workspace: Path) -> None:
    with store.create(workspace, "m") as session:
        first = session.append_message(user("one"))
    unterminated = MessageEntry(id="0badcafe", parent=first.id, message=reply("two"))
    with session.path.open("ab") as handle:
        handle.write(ENTRY_ADAPTER.dump_json(unterminated))

    assert list(store.open(session.id, readonly=True).entries) == [first, unterminated]
    with store.open(session.id) as resumed:
        third = resumed.append_message(user("three"))
    loaded = store.open(session.id, readonly=True)
    assert loaded.warnings == []
    assert list(loaded.entries) == [first, unterminated, third]


def test_corrupt_middle_line_is_reported_and_the_chain_reattached(
    store: SessionStore, workspace: Path
) -> None:
    with store.create(workspace, "m") as session:
        entries = [session.append_message(user(f"message {n}")) for n in range(4)]
    lines = session.path.read_bytes().split(b"\n")
    lines[2] = b'{"type": "message", "id": garbage'  # the entry "message 1"
    session.path.write_bytes(b"\n".join(lines))

    loaded = store.open(session.id, readonly=True)
    assert loaded.messages() == [user("message 0"), user("message 2"), user("message 3")]
    assert len(loaded.warnings) == 2
    assert loaded.warnings[0].startswith("line 3: corrupt entry skipped")
    assert f"parent {entries[1].id} is missing" in loaded.warnings[1]


def test_file_from_a_newer_lathe_is_refused_with_upgrade_advice(
    store: SessionStore, workspace: Path
) -> None:
    with store.create(workspace, "m") as session:
        pass
    header = json.loads(session.path.read_text())
    header["version"] = FORMAT_VERSION + 1
    session.path.write_text(json.dumps(header) + "\n")
    with pytest.raises(UsageError, match=r"version 4, newer .* upgrade lathe"):
        store.open(session.id, readonly=True)


def test_file_without_a_header_is_refused(store: SessionStore, workspace: Path) -> None:
    with store.create(workspace, "m") as session:
        pass
    session.path.write_text('{"type": "message"')
    with pytest.raises(UsageError, match="no readable header"):
        store.open(session.id, readonly=True)


@pytest.fixture
def three_sessions(
    store: SessionStore, workspace: Path, monkeypatch: pytest.MonkeyPatch
) -> list[str]:
    ids = iter(["aaa111000000", "aaa222000000", "bbb333000000"])
    monkeypatch.setattr("lathe.session.store.new_session_id", lambda: next(ids))
    made = []
    for _ in range(3):
        with store.create(workspace, "m") as session:
            made.append(session.id)
    return made


def test_unique_prefix_opens_the_session(store: SessionStore, three_sessions: list[str]) -> None:
    assert store.open("aaa1", readonly=True).id == "aaa111000000"
    assert store.open("b", readonly=True).id == "bbb333000000"
    assert store.open("aaa222000000", readonly=True).id == "aaa222000000"


def test_ambiguous_prefix_lists_the_candidates(
    store: SessionStore, three_sessions: list[str]
) -> None:
    with pytest.raises(UsageError) as error:
        store.open("aaa", readonly=True)
    message = str(error.value)
    assert "ambiguous" in message
    assert "aaa111000000" in message and "aaa222000000" in message
    assert "bbb333000000" not in message


def test_missing_or_malformed_id_says_how_to_list(
    store: SessionStore, three_sessions: list[str]
) -> None:
    with pytest.raises(UsageError, match=r"no session id starts with 'ccc'.*sessions list --all"):
        store.open("ccc")
    with pytest.raises(UsageError, match="is not a session id"):
        store.open("../etc")


def test_latest_is_the_session_of_the_workspace_worked_in_last(
    store: SessionStore, workspace: Path, tmp_path: Path
) -> None:
    # Worked in last: the time of its last entry, not of its file (a fork written now
    # copies entries, times and all, and is no later work).
    assert store.latest(workspace) is None
    with store.create(workspace, "m") as later, store.create(workspace, "m") as earlier:
        later.append(MessageEntry(message=user("later"), ts=datetime(2030, 1, 1, tzinfo=UTC)))
        earlier.append(MessageEntry(message=user("earlier"), ts=datetime(2029, 1, 1, tzinfo=UTC)))
    elsewhere = tmp_path / "other"
    elsewhere.mkdir()
    with store.create(elsewhere, "m") as other:
        other.append(MessageEntry(message=user("elsewhere"), ts=datetime(2031, 1, 1, tzinfo=UTC)))
    # Newest of all, a session with no entry: its run was killed before its first message.
    with store.create(workspace, "m") as empty:
        pass
    os.utime(empty.path, (3_000_000_000, 3_000_000_000))
    os.utime(earlier.path, (2_000_000_000, 2_000_000_000))
    os.utime(later.path, (1_000_000_000, 1_000_000_000))

    latest = store.latest(workspace)
    assert latest is not None
    with latest:
        assert latest.id == later.id
        assert latest.writable


def test_latest_on_a_session_in_use_names_the_holder(store: SessionStore, workspace: Path) -> None:
    with store.create(workspace, "m") as session:
        session.append_message(user("the task"))
        with pytest.raises(
            UsageError, match=rf"session {session.id} is in use .*pid {os.getpid()}"
        ):
            store.latest(workspace)
        assert store.latest(workspace, readonly=True) is not None


def test_list_summarises_each_session(store: SessionStore, workspace: Path, tmp_path: Path) -> None:
    with store.create(workspace, "m") as done:
        done.append_message(user("  fix the flaky test\nin tests/test_io.py"))
        done.append_message(reply("", call("c1", command="pytest"), tokens=1000))
        done.append_message(result("c1"))
        done.append_message(reply("fixed", tokens=2000))
        done.append(RunEndEntry(status="verified", turns=2, usage=Usage(input_tokens=3000)))
    with store.create(workspace, "m") as crashed:
        crashed.append_message(user("second task"))
    with store.create(workspace, "m") as resumed:
        resumed.append_message(user("third task"))
        resumed.append(RunEndEntry(status="max_turns", turns=1))
        resumed.append_message(user("keep going"))
    other = tmp_path / "elsewhere"
    other.mkdir()
    running = store.create(other, "m")
    for offset, session in enumerate([done, crashed, resumed, running]):
        os.utime(session.path, (1_000_000_000 + offset, 1_000_000_000 + offset))

    try:
        summaries = store.list(workspace)
        assert [s.id for s in summaries] == [resumed.id, crashed.id, done.id]
        first = summaries[-1]
        assert (first.title, first.turns, first.tokens, first.status) == (
            "fix the flaky test",
            2,
            1000 + 100 + 2000 + 200,
            "verified",
        )
        assert first.cwd == str(workspace.resolve())
        assert first.path == done.path
        assert first.created == done.header.created
        assert summaries[1].status == "unfinished"
        assert summaries[0].status == "unfinished"
        everything = store.list(None)
        assert [s.id for s in everything] == [running.id, resumed.id, crashed.id, done.id]
        assert everything[0].status == "running"
        assert everything[0].title == ""
    finally:
        running.close()
    assert store.list(other)[0].status == "unfinished"


def test_list_of_a_workspace_without_sessions_is_empty(
    store: SessionStore, workspace: Path
) -> None:
    assert store.list(workspace) == []
    assert store.list(None) == []
