"""`--continue` goes on with the session worked in last, through the real CLI against
the fake server. After `sessions fork ID --at ENTRY` it had taken the fork (the newest
file) and lost from the model's context all that came after the fork point."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path

from tests.fakes.openai_server import FakeOpenAIServer, Reply

from lathe.session import ENTRY_ADAPTER, MessageEntry, RunEndEntry, SessionStore
from lathe.session.index import INDEX_NAME
from lathe.types import Usage

from .cli_runs import lathe, one_line, only_session, run, said
from .helpers import reply, user


def test_continue_after_a_fork_goes_on_with_the_original(
    home: Path, workspace: Path, fake_openai: FakeOpenAIServer
) -> None:
    store = SessionStore(home)
    fake_openai.enqueue(Reply("first done"), Reply("second done"), Reply("third done"))
    assert run(home, workspace, fake_openai, "the first task").returncode == 0
    original = only_session(store, workspace)
    assert run(home, workspace, fake_openai, "--continue", "the second task").returncode == 0
    lines = [json.loads(line) for line in original.read_text().splitlines()]
    first_end = next(line["id"] for line in lines if line.get("type") == "run_end")
    forked = lathe(home, workspace, "sessions", "fork", original.stem[-12:], "--at", first_end)
    assert forked.returncode == 0, forked.stderr
    fork_id = forked.stdout.strip()

    listed = lathe(home, workspace, "sessions", "list")
    ids = [row.split("\t")[0] for row in listed.stdout.splitlines()]
    assert ids == [original.stem[-12:], fork_id]

    result = run(home, workspace, fake_openai, "--continue", "the third task")

    assert result.returncode == 0, result.stderr
    sent = said(fake_openai)
    assert "the second task" in sent and "second done" in sent


def test_fork_at_an_empty_entry_is_a_usage_error(home: Path, workspace: Path) -> None:
    store = SessionStore(home)
    with store.create(workspace, "m") as session:
        session.append_message(user("one"))
        session.append_message(user("two"))

    result = lathe(home, workspace, "sessions", "fork", session.id, "--at", "")

    assert result.returncode == 2
    line = one_line(result)
    assert "--at" in line and "ambiguous" not in line


def _from_scratch(store: SessionStore, workspace: Path) -> dict:
    (store.project_dir(workspace) / INDEX_NAME).unlink(missing_ok=True)
    return {s.id: s for s in store.list(workspace)}


def test_the_time_of_the_last_entry_is_when_it_was_last_worked_in(
    store: SessionStore, workspace: Path
) -> None:
    moment = datetime(2030, 5, 6, 7, 8, 9, tzinfo=UTC)
    with store.create(workspace, "m") as session:
        session.append(MessageEntry(message=user("the task"), ts=moment))
    assert store.list(workspace)[0].updated == moment
    with session.path.open("ab") as handle:
        later = MessageEntry(id="m2", parent=session.entries[-1].id, message=reply("x"),
                             ts=datetime(2031, 1, 1, tzinfo=UTC))  # fmt: skip
        handle.write(ENTRY_ADAPTER.dump_json(later) + b"\n")
    assert store.list(workspace)[0].updated == later.ts
    assert _from_scratch(store, workspace)[session.id].updated == later.ts
    with store.create(workspace, "m") as empty:
        pass  # no entry: when it was created
    listed = {s.id: s for s in store.list(workspace)}
    assert listed[empty.id].updated == empty.header.created


def test_a_fork_lists_after_the_work_it_copied(store: SessionStore, workspace: Path) -> None:
    with store.create(workspace, "m") as original:
        original.append_message(user("first"))
        original.append_message(reply("first done"))
        original.append_message(user("second"))
    at = original.entries[1].id
    with store.fork(original.id, at) as fork:
        pass

    assert [s.id for s in store.list(workspace)] == [original.id, fork.id]
    assert [s.id for s in _from_scratch(store, workspace).values()] == [original.id, fork.id]
    latest = store.latest(workspace, readonly=True)
    assert latest is not None and latest.id == original.id
    with store.fork(original.id) as whole:  # at its last entry: the same work, made later
        pass
    assert store.list(workspace)[0].id == whole.id


def test_a_version_1_line_without_its_time_is_not_the_latest_work(
    store: SessionStore, workspace: Path
) -> None:
    with store.create(workspace, "m") as current:
        current.append_message(user("the current task"))
    old = store.project_dir(workspace) / "20240301T100000Z_0ld5e5510000.jsonl"
    header = {"version": 1, "id": "0ld5e5510000", "cwd": str(workspace.resolve()),
              "created": "2024-03-01T10:00:00Z", "model": "m"}  # fmt: skip
    line = {"message": {"role": "user", "content": "long ago"}}
    old.write_text(json.dumps(header) + "\n" + json.dumps(line) + "\n")

    listed = store.list(workspace)

    assert [s.id for s in listed] == [current.id, "0ld5e5510000"]
    assert listed[1].updated == datetime(2024, 3, 1, 10, tzinfo=UTC)


def test_a_summary_an_older_lathe_cached_is_read_again(
    store: SessionStore, workspace: Path
) -> None:
    with store.create(workspace, "m") as session:
        session.append_message(user("the task"))
        session.append_message(reply("done", tokens=10))
        session.append(RunEndEntry(status="verified", turns=1, usage=Usage(input_tokens=500)))
    expected = store.list(workspace)
    index = store.project_dir(workspace) / INDEX_NAME
    data = json.loads(index.read_text())
    for fields in data["sessions"].values():
        del fields["last"], fields["open_tokens"]
        fields["tokens"] = 11  # what it counted: the replies alone
    index.write_text(json.dumps(data))

    assert store.list(workspace) == expected
    assert expected[0].tokens == 500
