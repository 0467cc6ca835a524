"""`worse_after`: when the check after code lathe applied from a reply is worse than the
one before it, beyond its totals (the end to end cases: tests/e2e/test_applied_code_worse.py)."""

from __future__ import annotations

from lathe.agent.verify import worse_after
from lathe.exec.base import ExecResult


def result(output: str, exit_code: int = 1) -> ExecResult:
    return ExecResult(exit_code, output, False, None, False, 0.1)


ADD_FAILS = "FAILED tests/t.py::test_add - assert 1 == 5\n1 failed, 1 passed in 0.1s\n"
MUL_FAILS = "FAILED tests/t.py::test_mul - assert 8 == 6\n1 failed, 1 passed in 0.1s\n"
BOTH_FAIL = (
    "FAILED tests/t.py::test_add - assert 1 == 5\n"
    "FAILED tests/t.py::test_mul - assert 8 == 6\n2 failed in 0.1s\n"
)
COLLECTION = (
    "ERROR tests/t.py\n!!!!! Interrupted: 1 error during collection !!!!!\n1 error in 0.2s\n"
)


def test_a_test_that_fails_now_and_did_not_before_is_worse():
    worse = worse_after(result(ADD_FAILS), result(MUL_FAILS))

    assert worse == (
        "1 failing, 1 passing, with tests/t.py::test_mul failing, which did not fail before"
    )


def test_tests_stopped_at_collection_are_worse_though_fewer_fail():
    worse = worse_after(result(BOTH_FAIL), result(COLLECTION, exit_code=2))

    assert worse == (
        "1 failing, 0 passing, and the tests no longer ran (Interrupted: 1 error during collection)"
    )


def test_fewer_tests_run_is_worse():
    worse = worse_after(result("3 failed in 0.1s\n"), result("2 failed in 0.1s\n"))

    assert worse == "2 failing, 0 passing, and 2 tests ran where 3 did"


def test_a_fix_of_one_test_of_two_is_not_worse():
    assert worse_after(result(BOTH_FAIL), result(MUL_FAILS)) == ""


def test_a_test_newly_named_when_more_ran_is_not_judged():
    # `pytest -x` stops at the first failure: the next one never ran before the fix.
    before = "FAILED tests/t.py::test_add - assert 1 == 5\n!!! stopping after 1 failures !!!\n"
    after = "FAILED tests/t.py::test_mul - assert 8 == 6\n!!! stopping after 1 failures !!!\n"
    worse = worse_after(
        result(before + "1 failed in 0.1s\n"), result(after + "1 failed, 1 passed in 0.1s\n")
    )

    assert worse == ""


def test_unittest_names_are_read_too():
    before = "FAIL: test_add (t.T.test_add)\nRan 2 tests in 0.001s\n\nFAILED (failures=1)\n"
    after = "FAIL: test_mul (t.T.test_mul)\nRan 2 tests in 0.001s\n\nFAILED (failures=1)\n"

    assert "test_mul (t.T.test_mul) failing" in worse_after(result(before), result(after))


def test_a_check_that_says_neither_is_never_judged():
    before, after = result("Traceback ...\nAssertionError\n"), result("SyntaxError: oops\n")

    assert worse_after(before, after) == ""


def test_a_check_that_no_longer_prints_counts_is_worse_as_before():
    assert worse_after(result(ADD_FAILS), result("SyntaxError: oops\n")) == "? failing, ? passing"
