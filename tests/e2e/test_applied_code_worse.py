"""End to end: code lathe applied from a reply is put back when the check got worse by
more than its totals say. A change that stopped the tests from running (a syntax error:
pytest's "1 error during collection" read as 1 failing where 2 had failed) had counted
as an improvement, and one that fixed a test but broke another that passed before left
the totals alike: both stayed in the file, which lathe's own edit had broken.
"""

from __future__ import annotations

import json
from pathlib import Path

from tests.e2e.test_small_model import finished, notes_to_model, run_local_profile
from tests.fakes.openai_server import Reply

CALC_TESTS = """from calc import add, mul


def test_add():
    assert add(2, 3) == 5


def test_mul():
    assert mul(2, 3) == 6
"""
BOTH_WRONG = "def add(a, b):\n    return a - b\n\n\ndef mul(a, b):\n    return a ** b\n"
ADD_WRONG = "def add(a, b):\n    return a - b\n\n\ndef mul(a, b):\n    return a * b\n"


def calc_workspace(tmp_path: Path, calc: str) -> Path:
    ws = tmp_path / "ws"
    (ws / "tests").mkdir(parents=True)
    (ws / "calc.py").write_text(calc)
    (ws / "tests" / "test_calc.py").write_text(CALC_TESTS)
    return ws


def test_applied_code_that_stops_the_tests_from_running_is_put_back(tmp_path, fake_openai):
    ws = calc_workspace(tmp_path, BOTH_WRONG)
    broken = "Fix:\n```python\ndef add(a, b):\n    return (a + b\n```"
    fake_openai.enqueue(Reply(broken), Reply("done"), Reply("done"), Reply("done"))

    run, events = run_local_profile(fake_openai, tmp_path, ws, "--max-turns", "4")

    assert finished(events)["status"] != "verified", run.stderr
    assert (ws / "calc.py").read_text() == BOTH_WRONG
    told = notes_to_model(fake_openai.chat_bodies()[1])[-1]
    assert "made things worse" in told
    assert "put the files back" in told
    assert "the tests no longer ran" in told


def test_applied_code_that_breaks_a_passing_test_is_put_back(tmp_path, fake_openai):
    ws = calc_workspace(tmp_path, ADD_WRONG)
    trade = (
        "Fix:\n```python\ndef add(a, b):\n    return a + b\n\n\n"
        "def mul(a, b):\n    return a ** b\n```"
    )
    fake_openai.enqueue(Reply(trade), Reply("done"), Reply("done"), Reply("done"))

    run, events = run_local_profile(fake_openai, tmp_path, ws, "--max-turns", "4")

    assert finished(events)["status"] != "verified", run.stderr
    assert (ws / "calc.py").read_text() == ADD_WRONG
    told = notes_to_model(fake_openai.chat_bodies()[1])[-1]
    assert "made things worse" in told
    assert "tests/test_calc.py::test_mul" in told
    assert "did not fail before" in told


def test_applied_code_that_fixes_a_test_and_breaks_none_stays(tmp_path, fake_openai):
    ws = calc_workspace(tmp_path, BOTH_WRONG)
    half = "Fix:\n```python\ndef add(a, b):\n    return a + b\n```"
    fake_openai.enqueue(Reply(half), Reply("done"), Reply("done"), Reply("done"))

    run, events = run_local_profile(fake_openai, tmp_path, ws, "--max-turns", "2")

    assert finished(events)["status"] != "verified", run.stderr
    assert "return a + b\n\n\ndef mul" in (ws / "calc.py").read_text()
    assert "made things worse" not in json.dumps(fake_openai.chat_bodies())


def test_a_check_that_says_neither_counts_nor_names_is_never_judged(tmp_path, fake_openai):
    # What the check cannot tell is not "worse": the applied code stays, as before.
    ws = calc_workspace(tmp_path, BOTH_WRONG)
    broken = "Fix:\n```python\ndef add(a, b):\n    return (a + b\n```"
    fake_openai.enqueue(Reply(broken), Reply("done"), Reply("done"), Reply("done"))
    check = "python -c 'import calc, sys; sys.exit(calc.add(2, 3) != 5)'"

    run, _ = run_local_profile(fake_openai, tmp_path, ws, "--verify", check, "--max-turns", "2")

    assert "return (a + b" in (ws / "calc.py").read_text(), run.stderr
    assert "made things worse" not in json.dumps(fake_openai.chat_bodies())
