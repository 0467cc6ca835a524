"""The check's output a small model is shown: the lines that say what failed and the
runner's summary, within the profile's verify_output_bytes, the whole in a file."""

from __future__ import annotations

from pathlib import Path

from lathe.agent.verify import failure_focus, focused
from lathe.exec.base import ExecResult

NOISE = "".join(f"    line {n} of the test's source, shown for context\n" for n in range(40))
PYTEST = (
    ".......F......" + " " * 59 + "[100%]\n"
    "=================================== FAILURES ===================================\n"
    "________________________________ test_millions _________________________________\n"
    + NOISE
    + '>           raise ValueError(f"not an amount: {text!r}")\n'
    "E           ValueError: not an amount: '1,234,567.89'\n"
    + NOISE
    + "ledgerio/amounts.py:30: ValueError\n"
    "=========================== short test summary info ============================\n"
    "FAILED tests/test_amounts.py::test_millions - ValueError: not an amount: '1,2...\n"
    "1 failed, 13 passed in 0.21s\n"
)


def test_the_error_lines_and_the_summary_are_kept_and_the_context_left_out() -> None:
    shown = failure_focus(PYTEST, 800)

    assert len(shown.encode()) <= 800
    assert "E           ValueError: not an amount: '1,234,567.89'" in shown
    assert '>           raise ValueError(f"not an amount: {text!r}")' in shown
    assert "ledgerio/amounts.py:30: ValueError" in shown
    assert "_ test_millions _" in shown
    assert shown.endswith("1 failed, 13 passed in 0.21s")
    assert "line 7 of the test's source" not in shown
    assert "[... 40 lines ...]" in shown


def test_a_short_output_is_left_whole_and_a_long_one_kept_whole_in_a_file(tmp_path: Path) -> None:
    short = ExecResult(1, "1 failed\n", False, None, False, 0.1)
    assert focused(short, 800, tmp_path) is short

    long = ExecResult(1, PYTEST, False, None, False, 0.1)
    cut = focused(long, 800, tmp_path)

    assert cut.truncated and cut.exit_code == 1
    assert cut.output == failure_focus(PYTEST, 800)
    assert cut.full_output_path is not None
    assert cut.full_output_path.read_text() == PYTEST
