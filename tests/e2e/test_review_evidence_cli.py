"""End to end: code lathe applied from a reply that fixed a test stays, though the
tests log an "ERROR: ..." line that differs from run to run. Such a line (captured
stderr, pip, an app's log) had been read as a failing test that did not fail before, so
the improvement was judged worse and put back.
"""

from __future__ import annotations

import json
from pathlib import Path

from tests.e2e.test_applied_code_worse import BOTH_WRONG, calc_workspace
from tests.e2e.test_small_model import finished, run_local_profile
from tests.fakes.openai_server import Reply

LOGGING_TESTS = """import sys
import time

from calc import add, mul


def log_cache_miss():
    print(f"ERROR: cache miss at {time.time_ns()}", file=sys.stderr)


def test_add():
    log_cache_miss()
    assert add(2, 3) == 5


def test_mul():
    log_cache_miss()
    assert mul(2, 3) == 6
"""


def test_applied_code_that_fixes_a_test_stays_beside_logged_errors(tmp_path: Path, fake_openai):
    ws = calc_workspace(tmp_path, BOTH_WRONG)
    (ws / "tests" / "test_calc.py").write_text(LOGGING_TESTS)
    half = "Fix:\n```python\ndef add(a, b):\n    return a + b\n```"
    fake_openai.enqueue(Reply(half), Reply("done"), Reply("done"), Reply("done"))

    run, events = run_local_profile(fake_openai, tmp_path, ws, "--max-turns", "2")

    assert finished(events)["status"] != "verified", run.stderr
    assert "return a + b\n\n\ndef mul" in (ws / "calc.py").read_text()
    assert "made things worse" not in json.dumps(fake_openai.chat_bodies())
