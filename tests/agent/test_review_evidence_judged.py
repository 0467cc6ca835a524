"""Reading a runner's output for the tests it names failing, as a review found it:

- any "ERROR: ..." line (captured stderr, pip, an app's log) was read as a failing test,
  so a change that fixed a test was judged worse and put back;
- `^\\s*--- FAIL:` under MULTILINE crossed newlines (quadratic in blank lines), on the
  event loop.
"""

from __future__ import annotations

import threading

import pytest

from lathe.agent import verify
from lathe.agent.evidence import _FAILING_TEST, failing_tests
from lathe.agent.finish import CallRecord, RunState
from lathe.agent.verify import _CODE_BLOCK, VerifyGate, VerifySettings, worse_after
from lathe.exec.base import ExecResult
from lathe.tools.base import ToolOutput
from lathe.types import AssistantMessage, ToolCall
from lathe.words import load_words


def result(output: str, exit_code: int = 1) -> ExecResult:
    return ExecResult(exit_code, output, False, None, False, 0.1)


SUMMARY = "=" * 20 + " short test summary info " + "=" * 20 + "\n"


# 1. a log line is no failing test


def test_a_fix_with_an_error_line_in_the_captured_output_is_not_worse():
    before = (
        "----- Captured stderr call -----\nERROR: cache miss at 12:00:01.331\n" + SUMMARY
        + "FAILED tests/test_calc.py::test_add - assert 3 == 4\n"
        "FAILED tests/test_calc.py::test_mul - assert 5 == 6\n"
        "========================= 2 failed, 3 passed in 0.12s =========================\n"
    )  # fmt: skip
    after = (
        "----- Captured stderr call -----\nERROR: cache miss at 12:00:07.902\n" + SUMMARY
        + "FAILED tests/test_calc.py::test_mul - assert 5 == 6\n"
        "========================= 1 failed, 4 passed in 0.12s =========================\n"
    )  # fmt: skip

    assert worse_after(result(before), result(after)) == ""


def test_a_unittest_fix_beside_a_logged_error_is_not_worse():
    before = (
        "FAIL: test_add (t.T.test_add)\nFAIL: test_mul (t.T.test_mul)\n"
        "Ran 5 tests in 0.01s\n\nFAILED (failures=2)\n"
    )
    after = (
        "ERROR: could not reach cache (retry 2)\nFAIL: test_mul (t.T.test_mul)\n"
        "Ran 5 tests in 0.01s\n\nFAILED (failures=1)\n"
    )

    assert worse_after(result(before), result(after)) == ""


def test_a_log_line_that_differs_is_no_newly_failing_test_at_the_same_count():
    before = "ERROR: cache miss at 12:00:01\nFAILED tests/t.py::test_a - x\n1 failed in 0.1s\n"
    after = "ERROR: cache miss at 12:00:09\nFAILED tests/t.py::test_a - x\n1 failed in 0.1s\n"

    assert worse_after(result(before), result(after)) == ""


def test_a_test_newly_failing_beside_fewer_failures_is_not_judged():
    # Fewer fail: whatever names changed, the change helped; the totals said so.
    before = "FAILED tests/t.py::test_a - x\nFAILED tests/t.py::test_b - x\n2 failed in 0.1s\n"
    after = "FAILED tests/t.py::test_c - x\n1 failed, 1 passed in 0.1s\n"

    assert worse_after(result(before), result(after)) == ""


@pytest.mark.parametrize(
    "line",
    [
        "ERROR: cache miss at 12:00:07.902",
        "ERROR: Could not find a version that satisfies the requirement foo",
        "ERROR: could not reach cache (retry 2)",
        "FAIL: the widget did not load",
        "ERROR something went wrong",
        "FAILED to connect to db - timeout",
        "--- FAIL: the build",
        "test it ... FAILED to start",
    ],
)
def test_lines_not_shaped_as_a_test_name_name_no_test(line):
    assert failing_tests(f"{line}\n") == frozenset()


@pytest.mark.parametrize(
    "line, name",
    [
        ("FAILED tests/t.py::test_a - assert 1 == 2", "tests/t.py::test_a"),
        ("FAILED tests/t.py::test_a[1-2]", "tests/t.py::test_a[1-2]"),
        ("ERROR tests/t.py", "tests/t.py"),
        ("ERROR tests/t.py - ImportError: no module x", "tests/t.py"),
        ("tests/t.py::T::test_a FAILED  [ 50%]", "tests/t.py::T::test_a"),
        ("FAIL: test_add (t.T.test_add)", "test_add (t.T.test_add)"),
        ("ERROR: test_add (t.T)", "test_add (t.T)"),
        ("FAIL: test_x (t.T.test_x) (i=1)", "test_x (t.T.test_x) (i=1)"),
        ("--- FAIL: TestAdd (0.00s)", "TestAdd"),
        ("    --- FAIL: TestAdd/negative (0.00s)", "TestAdd/negative"),
        ("test calc::tests::add ... FAILED", "calc::tests::add"),
    ],
)
def test_each_runners_failing_test_is_named(line, name):
    assert failing_tests(f"ok\n{line}\nmore\n") == frozenset({name})


# 2. no pattern at a line's start reads across lines


def test_the_failing_test_pattern_does_not_start_on_a_blank_line_before_it():
    match = _FAILING_TEST.search("\n\n\n--- FAIL: TestA (0.00s)\n")

    assert match is not None and match.start() == 3


def test_the_code_fence_pattern_does_not_start_on_a_blank_line_before_it():
    match = _CODE_BLOCK.search("text\n\n\n  ```python\n")

    assert match is not None and match.start() == 7


async def test_the_worse_judgement_runs_off_the_event_loop(monkeypatch):
    judged_on: list[threading.Thread] = []

    def judging(before: ExecResult, after: ExecResult) -> str:
        judged_on.append(threading.current_thread())
        return ""

    monkeypatch.setattr(verify, "worse_after", judging)
    checks = iter([result("1 failed in 0.1s\n"), result("1 failed in 0.1s\n")])
    call = ToolCall(id="c1", name="edit", arguments="{}")

    async def run_check(command: str) -> ExecResult:
        return next(checks)

    async def reply_code(text: str, turn: int) -> list[ToolCall]:
        return [call]

    gate = VerifyGate(
        VerifySettings(command="pytest"), run_check, load_words(), reply_code=reply_code,
        keep_files=lambda calls: lambda: None,
    )  # fmt: skip
    run = RunState(emit=lambda event: None)
    await gate.begin(run)
    await gate.after_reply(AssistantMessage(text="```python\nx = 1\n```"), run)
    applied = CallRecord(call=call, tool=None, arguments={}, output=ToolOutput("edited"))
    await gate.after_calls([applied], run, by_lathe=True)

    assert judged_on and judged_on[0] is not threading.main_thread()
