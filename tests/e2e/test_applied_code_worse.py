"""End to end: code lathe applied from a reply is put back when the check got worse by
more than its totals say. A change that stopped the tests from running (a syntax error:
pytest's "1 error during collection" read as 1 failing where 2 had failed) had counted
as an improvement, and one that fixed a test but broke another that passed before left
the totals alike: both stayed in the file, which lathe's own edit had broken.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
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
ADJACENT_ADD_WRONG = (
    "def both(a, b):\n    total = a - b\n    product = a * b\n    return total, product\n\n\n"
    "def add(a, b):\n    return both(a, b)[0]\n\n\ndef mul(a, b):\n    return both(a, b)[1]\n"
)


def calc_workspace(tmp_path: Path, calc: str) -> Path:
    ws = tmp_path / "ws"
    (ws / "tests").mkdir(parents=True)
    (ws / "calc.py").write_text(calc)
    (ws / "tests" / "test_calc.py").write_text(CALC_TESTS)
    return ws


@pytest.mark.parametrize(
    ("start", "reply", "said"),
    [
        # It stops the tests from running: "1 error" had read as fewer than "2 failed".
        (
            BOTH_WRONG,
            "Fix:\n```python\ndef add(a, b):\n    return (a + b\n```",
            ("put the files back", "the tests no longer ran"),
        ),
        # It fixes add and breaks mul, which passed: the counts stayed the same. (One
        # change of adjacent lines: separate changes are tried one at a time, see
        # test_applied_code_in_parts.py.)
        (
            ADJACENT_ADD_WRONG,
            "Fix:\n```python\ndef both(a, b):\n    total = a + b\n    product = a ** b\n"
            "    return total, product\n```",
            ("tests/test_calc.py::test_mul", "did not fail before"),
        ),
    ],
    ids=["stops-the-tests", "breaks-a-passing-test"],
)
def test_applied_code_that_makes_the_check_worse_is_put_back(
    tmp_path, fake_openai, start, reply, said
):
    ws = calc_workspace(tmp_path, start)
    fake_openai.enqueue(Reply(reply), Reply("done"), Reply("done"), Reply("done"))

    run, events = run_local_profile(fake_openai, tmp_path, ws, "--max-turns", "4")

    assert finished(events)["status"] != "verified", run.stderr
    assert (ws / "calc.py").read_text() == start
    told = notes_to_model(fake_openai.chat_bodies()[1])[-1]
    assert "made things worse" in told
    for words in said:
        assert words in told


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
