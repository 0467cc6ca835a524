"""`sessions list` parses only the session files that changed since the last listing;
the index it keeps is a cache whose loss or damage costs a parse, nothing else."""

from __future__ import annotations

import dataclasses
import os
import subprocess
import sys
from pathlib import Path

import pytest

import lathe.session.appended as appended_module
import lathe.session.session as session_module
import lathe.session.summarise as summarise_module
from lathe.session import ENTRY_ADAPTER, MessageEntry, RunEndEntry, SessionStore
from lathe.session.index import INDEX_NAME
from lathe.session.session import SessionWriteError
from lathe.types import Usage

from .helpers import reply, user


def _session(store: SessionStore, workspace: Path, task: str) -> str:
    with store.create(workspace, "m") as session:
        session.append_message(user(task))
        session.append_message(reply("done"))
        session.append(RunEndEntry(status="verified", turns=1, usage=Usage()))
    return session.id


def _count_parses(monkeypatch: pytest.MonkeyPatch) -> list[Path]:
    parsed: list[Path] = []
    real = summarise_module.load_file

    def counting(path: Path):
        parsed.append(path)
        return real(path)

    monkeypatch.setattr(summarise_module, "load_file", counting)
    return parsed


def test_a_second_listing_parses_nothing_and_says_the_same(
    store: SessionStore, workspace: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    for n in range(3):
        _session(store, workspace, f"task {n}")
    first = store.list(workspace)
    parsed = _count_parses(monkeypatch)

    second = store.list(workspace)

    assert parsed == []
    assert second == first
    assert [s.title for s in second] and {s.status for s in second} == {"verified"}


def _listed_from_scratch(store: SessionStore, workspace: Path) -> dict:
    (store.project_dir(workspace) / INDEX_NAME).unlink()
    return {s.id: s for s in store.list(workspace)}


def test_a_session_that_grew_has_only_its_new_lines_read(
    store: SessionStore, workspace: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    kept = _session(store, workspace, "kept")
    grown = _session(store, workspace, "grown")
    store.list(workspace)
    # Appended by a writer that has not closed the session (still running, or killed).
    more = [
        MessageEntry(id="m1", message=user("more")),
        MessageEntry(id="m2", parent="m1", message=reply("again", tokens=7)),
    ]
    with store.find(grown).open("ab") as handle:
        handle.write(b"".join(ENTRY_ADAPTER.dump_json(entry) + b"\n" for entry in more))
    parsed = _count_parses(monkeypatch)

    summaries = {s.id: s for s in store.list(workspace)}

    assert parsed == []  # neither file was parsed in full
    assert summaries[grown].turns == 2 and summaries[grown].status == "unfinished"
    assert summaries[grown].tokens == summaries[kept].tokens + 7
    assert summaries[kept].turns == 1
    assert summaries == _listed_from_scratch(store, workspace)


def _count_reads(monkeypatch: pytest.MonkeyPatch) -> list[Path]:
    """Every file the listing reads, in full or only its new lines."""
    read = _count_parses(monkeypatch)
    real = appended_module.grown

    def counting(path: Path, *rest):  # type: ignore[no-untyped-def]
        read.append(path)
        return real(path, *rest)

    monkeypatch.setattr(appended_module, "grown", counting)
    return read


def test_a_session_closed_after_a_run_is_listed_without_reading_it(
    store: SessionStore, workspace: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _session(store, workspace, "kept")
    grown = _session(store, workspace, "grown")
    store.list(workspace)
    with store.open(grown) as session:
        session.append_message(user("more"))
        session.append_message(reply("again", tokens=7))
        session.append(RunEndEntry(status="failed", turns=1, usage=Usage()))
    read = _count_reads(monkeypatch)

    summaries = {s.id: s for s in store.list(workspace)}

    assert read == []
    assert (summaries[grown].turns, summaries[grown].status) == (2, "failed")
    assert summaries == _listed_from_scratch(store, workspace)


def test_a_session_loaded_with_a_corrupt_line_is_closed_into_the_index_as_it_reloads(
    store: SessionStore, workspace: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    damaged = _session(store, workspace, "task")
    path = store.find(damaged)
    with path.open("ab") as handle:
        handle.write(b"{not json}\n")
    with store.open(damaged) as session:
        session.append_message(reply("after the damage", tokens=3))
    read = _count_reads(monkeypatch)

    listed = store.list(workspace)

    assert read == []
    assert listed[0].turns == 2
    assert {s.id: s for s in listed} == _listed_from_scratch(store, workspace)


def test_a_session_whose_write_failed_is_left_to_the_full_parse(
    store: SessionStore, workspace: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    failing = _session(store, workspace, "task")
    store.list(workspace)

    def half_then_full_disk(fd: int, data: bytes) -> None:
        os.write(fd, data[: len(data) // 2])
        raise OSError(28, "No space left on device")

    with store.open(failing) as session:
        session.append_message(reply("written", tokens=3))
        monkeypatch.setattr(session_module, "write_durably", half_then_full_disk)
        with pytest.raises(SessionWriteError, match="No space left on device"):
            session.append_message(reply("cut short"))
    monkeypatch.undo()
    read = _count_reads(monkeypatch)

    listed = store.list(workspace)

    assert {p.stem.rpartition("_")[2] for p in read} == {failing}
    assert listed[0].turns == 2


def test_a_grown_session_reads_the_same_as_one_parsed_in_full_after_each_append(
    store: SessionStore, workspace: Path
) -> None:
    with store.create(workspace, "m") as session:
        pass
    appends = [
        lambda s: s.append_message(user("the task\nsecond line")),
        lambda s: s.append_message(reply("one", tokens=5)),
        lambda s: s.append(RunEndEntry(status="failed", turns=1, usage=Usage())),
        lambda s: s.append_message(user("continue")),
        lambda s: s.append_message(reply("two", tokens=3)),
        lambda s: s.append(RunEndEntry(status="verified", turns=1, usage=Usage())),
    ]
    for append in appends:
        with store.open(session.id) as reopened:
            append(reopened)
        grown = {s.id: s for s in store.list(workspace)}
        assert grown == _listed_from_scratch(store, workspace)
    assert grown[session.id].title == "the task"
    assert grown[session.id].status == "verified" and grown[session.id].turns == 2


@pytest.mark.parametrize(
    "damage",
    [b'{"torn', b"{not json}\n", b"\n", b'{"type": "message"}\n'],
    ids=["torn tail", "corrupt line", "blank line", "invalid entry"],
)
def test_damage_after_the_old_end_is_left_to_the_full_parse(
    store: SessionStore, workspace: Path, monkeypatch: pytest.MonkeyPatch, damage: bytes
) -> None:
    grown = _session(store, workspace, "task")
    store.list(workspace)
    path = next(store.project_dir(workspace).glob("*.jsonl"))
    with path.open("ab") as handle:
        handle.write(damage)
    parsed = _count_parses(monkeypatch)

    summary = store.list(workspace)

    assert [p.stem.rpartition("_")[2] for p in parsed] == [grown]
    assert summary[0].turns == 1


def test_a_file_rewritten_before_its_old_end_is_parsed_in_full(
    store: SessionStore, workspace: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    grown = _session(store, workspace, "task")
    store.list(workspace)
    path = next(store.project_dir(workspace).glob("*.jsonl"))
    data = path.read_bytes()
    # Same inode, longer, but a byte before the old end changed: not a pure append.
    more = ENTRY_ADAPTER.dump_json(MessageEntry(id="later", parent=None, message=reply("more")))
    with path.open("r+b") as handle:
        handle.write(data.replace(b'"task"', b'"TASK"', 1) + more + b"\n")
    parsed = _count_parses(monkeypatch)

    summary = store.list(workspace)

    assert [p.stem.rpartition("_")[2] for p in parsed] == [grown]
    assert summary[0].title == "TASK"


@pytest.mark.parametrize("damage", [b"", b"{not json", b'{"version": 99}'])
def test_a_lost_or_damaged_index_is_rebuilt(
    store: SessionStore, workspace: Path, damage: bytes
) -> None:
    _session(store, workspace, "task")
    expected = store.list(workspace)
    index = store.project_dir(workspace) / INDEX_NAME
    assert index.exists()
    index.write_bytes(damage)

    assert store.list(workspace) == expected
    assert index.read_bytes() != damage


@pytest.mark.parametrize("deleted", [False, True])
def test_a_listing_the_index_answers_loads_no_entry_models(
    store: SessionStore, workspace: Path, deleted: bool
) -> None:
    # The models (pydantic and the message types) are most of `sessions list`'s time.
    # A deleted session makes the listing write the index back, which must stay light.
    _session(store, workspace, "fix it")
    gone = _session(store, workspace, "to delete") if deleted else None
    store.list(workspace)  # builds the index
    if gone is not None:
        store.find(gone).unlink()
    probe = (
        "import sys\nfrom pathlib import Path\n"
        "from lathe.session.listing import list_sessions\n"
        f"found = list_sessions(Path({str(store.root)!r}), Path({str(workspace)!r}))\n"
        "print(len(found), 'lathe.session.entries' in sys.modules, 'pydantic' in sys.modules)\n"
    )
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["1", "False", "False"]


def test_cached_tokens_and_a_long_title_read_alike_grown_or_parsed_in_full(
    store: SessionStore, workspace: Path
) -> None:
    # Grown, a session counted only input and output tokens (11,000 where the parse and
    # the run's end said 101,000); and a one-line task of 1.5 MB made a 1.5 MB index.
    with store.create(workspace, "m") as session:
        pass
    store.list(workspace)
    cached = Usage(input_tokens=10_000, output_tokens=1_000, cache_read_tokens=90_000)
    more = [  # by a writer that has not closed the session
        MessageEntry(id="m1", message=user("x" * 100_000)),
        MessageEntry(id="m2", parent="m1", message=dataclasses.replace(reply(), usage=cached)),
    ]
    with store.find(session.id).open("ab") as handle:
        handle.write(b"".join(ENTRY_ADAPTER.dump_json(entry) + b"\n" for entry in more))
    grown = {s.id: s for s in store.list(workspace)}

    assert grown == _listed_from_scratch(store, workspace)
    assert grown[session.id].tokens == 101_000
    assert len(grown[session.id].title) == 1_000
