"""The turn limit reached after the last check failed: what was changed since that check
is checked before the run ends, so neither the status nor `--attempts` acts on a failure
that no longer holds."""

from __future__ import annotations

import json

from tests.e2e.test_run_edges import lathe_run
from tests.fakes.openai_server import Call, Reply


def _finished(done) -> dict:
    return [json.loads(line) for line in done.stdout.splitlines()][-1]


def _checks(done) -> list[dict]:
    events = [json.loads(line) for line in done.stdout.splitlines()]
    return [e for e in events if e["type"] == "verify_finished"]


def test_a_change_in_the_last_turn_is_checked_before_the_run_ends(tmp_path, fake_openai):
    ws = tmp_path / "ws"
    ws.mkdir()
    fake_openai.enqueue(
        Reply("Done."),  # the check fails: no file yet
        Reply(calls=[Call("write", {"path": "ok", "content": "1\n"})]),  # the last turn
    )
    done = lathe_run(fake_openai, ws, tmp_path, "--json", "--verify", "test -f ok",
                     "--max-turns", "2", "create a file named ok")  # fmt: skip
    finished = _finished(done)
    assert finished["status"] == "verified", finished
    assert "turn limit" in finished["reason"]
    assert [c["passed"] for c in _checks(done)] == [False, False, True]
    assert done.returncode == 0
    assert (ws / "ok").exists()


def test_attempts_keep_a_fix_made_in_the_last_turn(tmp_path, fake_openai):
    # The fix passed, yet the attempt ended "failed" on the check before it, and the
    # next attempt put the workspace back: the fix was lost.
    ws = tmp_path / "ws"
    ws.mkdir()
    fake_openai.enqueue(
        Reply("Done."),
        Reply(calls=[Call("write", {"path": "ok", "content": "1\n"})]),
    )
    done = lathe_run(fake_openai, ws, tmp_path, "--json", "--verify", "test -f ok",
                     "--max-turns", "2", "--attempts", "2", "create a file named ok")  # fmt: skip
    assert _finished(done)["status"] == "verified"
    assert not [
        e for e in map(json.loads, done.stdout.splitlines()) if e["type"] == "attempt_started"
    ]
    assert (ws / "ok").read_text() == "1\n"


def test_a_last_turn_that_changed_nothing_ends_failed_without_another_check(tmp_path, fake_openai):
    ws = tmp_path / "ws"
    ws.mkdir()
    fake_openai.enqueue(
        Reply("Done."),
        Reply(calls=[Call("read", {"path": "missing.txt"})]),
    )
    done = lathe_run(fake_openai, ws, tmp_path, "--json", "--verify", "test -f ok",
                     "--max-turns", "2", "create a file named ok")  # fmt: skip
    finished = _finished(done)
    assert finished["status"] == "failed"
    assert finished["reason"] == "the verify command still failed after 2 turns"
    assert len(_checks(done)) == 2  # the baseline and the one after "Done."
    assert done.returncode == 1


def test_a_change_that_still_fails_at_the_turn_limit_ends_failed(tmp_path, fake_openai):
    ws = tmp_path / "ws"
    ws.mkdir()
    fake_openai.enqueue(
        Reply("Done."),
        Reply(calls=[Call("write", {"path": "not-it", "content": "1\n"})]),
    )
    done = lathe_run(fake_openai, ws, tmp_path, "--json", "--verify", "test -f ok",
                     "--max-turns", "2", "create a file named ok")  # fmt: skip
    finished = _finished(done)
    assert finished["status"] == "failed"
    assert [c["passed"] for c in _checks(done)] == [False, False, False]
    assert done.returncode == 1
