"""`sessions list` parses only the session files that changed since the last listing;
the index it keeps is a cache whose loss or damage costs a parse, nothing else."""

from __future__ import annotations

from pathlib import Path

import pytest

import lathe.session.store as store_module
from lathe.session import RunEndEntry, SessionStore
from lathe.session.index import INDEX_NAME
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
    real = store_module.load_file

    def counting(path: Path):
        parsed.append(path)
        return real(path)

    monkeypatch.setattr(store_module, "load_file", counting)
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


def test_a_session_that_grew_is_parsed_again(
    store: SessionStore, workspace: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    kept = _session(store, workspace, "kept")
    grown = _session(store, workspace, "grown")
    store.list(workspace)
    with store.open(grown) as session:
        session.append_message(user("more"))
        session.append_message(reply("again", tokens=7))
    parsed = _count_parses(monkeypatch)

    summaries = {s.id: s for s in store.list(workspace)}

    assert [p.stem.rpartition("_")[2] for p in parsed] == [grown]
    assert summaries[grown].turns == 2 and summaries[grown].status == "unfinished"
    assert summaries[kept].turns == 1


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
