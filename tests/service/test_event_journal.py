"""The event journal tells a run the server's death cut (its `run_started` has no
`run_finished` after it) from one that ended, reading back from its end."""

from __future__ import annotations

import json

from lathe.service.journal import EventJournal


def _journal(path, *events):
    journal = EventJournal(path)
    for event in events:
        journal.append(json.dumps(event, separators=(",", ":")))
    return journal


def test_the_events_of_a_run_with_no_end_are_found_across_blocks(tmp_path):
    long = "x" * 100_000  # a line longer than a block, across a block's start
    journal = _journal(
        tmp_path / "s.events",
        {"type": "run_started", "task": "one"},
        {"type": "run_finished", "status": "unverified"},
        {"type": "run_started", "task": "two"},
        {"type": "tool_started", "call_id": "a", "output": long},
        *({"type": "text_delta", "text": "y" * 100} for _ in range(2_000)),
        {"type": "tool_finished", "call_id": "a"},
        {"type": "tool_started", "call_id": "b"},
        {"type": "child_event", "event": {"type": "run_finished"}},
    )
    found = journal.unfinished_run({"tool_started", "tool_finished"})
    assert [json.loads(e)["call_id"] for e in found or []] == ["a", "a", "b"]
    assert json.loads(found[0])["output"] == long


def test_a_journal_whose_last_run_ended_or_that_has_none_has_no_unfinished_run(tmp_path):
    ended = _journal(tmp_path / "ended.events", {"type": "run_started"},
                     {"type": "run_finished"}, {"type": "notice"})  # fmt: skip
    assert ended.unfinished_run({"notice"}) is None
    assert _journal(tmp_path / "empty.events").unfinished_run({"notice"}) is None
