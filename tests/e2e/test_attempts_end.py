"""How a `lathe run --attempts N` ends, through the real CLI against the fake server.

- With `--json`, the notice that no further attempt would start (the budget reached)
  came after the last `run_finished`, which docs/events.md promises is the last line,
  and that `run_finished` said only that the attempt was stuck.
- The closing `status:` line gave the last attempt's turns and tokens alone, which read
  as what the command had spent.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

from tests.checkpoint.helpers import bash, run
from tests.fakes.openai_server import Reply

VERIFY = "sh calc.sh"
NO_FURTHER = "no further attempt was made: the token budget (50) was reached"


def _workspace(tmp_path: Path) -> Path:
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "calc.sh").write_text("exit 1\n")
    return ws


def _over_budget_run(fake_openai, tmp_path: Path, *args: str):
    """Attempt 1 is stuck ("Done." three times) past a 50-token budget: no attempt 2."""
    fake_openai.enqueue(*[Reply("Done.")] * 3)
    return run(
        fake_openai, _workspace(tmp_path), tmp_path, *args, "--verify", VERIFY,
        "--attempts", "3", "--max-tokens", "50", "go",
    )  # fmt: skip


def test_run_finished_stays_the_last_line_when_the_budget_stops_the_attempts(tmp_path, fake_openai):
    result = _over_budget_run(fake_openai, tmp_path, "--json")

    assert result.returncode == 1, result.stderr
    events = [json.loads(line) for line in result.stdout.splitlines()]
    *_, notice, last = events
    assert last["type"] == "run_finished", last
    assert last["status"] == "stuck"
    assert last["reason"].startswith("the model said it was done 3 times"), last["reason"]
    assert NO_FURTHER in last["reason"], last["reason"]
    assert notice["type"] == "notice" and notice["message"].startswith("no further attempt: ")
    assert len(fake_openai.chat_bodies()) == 3  # no attempt 2


def test_the_closing_lines_say_the_budget_stopped_the_attempts(tmp_path, fake_openai):
    result = _over_budget_run(fake_openai, tmp_path)

    assert result.returncode == 1, result.stderr
    lines = result.stderr.splitlines()
    status = next(i for i, line in enumerate(lines) if line.startswith("status: stuck"))
    assert NO_FURTHER in lines[status + 1], lines[status:]
    assert not [line for line in lines[status:] if line.startswith("lathe: info:")], lines


_STATUS = re.compile(r"status: \w+ after (\d+) turns?; tokens (\d+) in, (\d+) out")


def test_the_closing_lines_say_what_all_the_attempts_spent(tmp_path, fake_openai):
    ws = _workspace(tmp_path)
    fake_openai.enqueue(
        *[Reply("Done.")] * 3,  # attempt 1: stuck
        Reply(calls=[bash("echo 'exit 0' > calc.sh")]), Reply("Fixed."),  # attempt 2
    )  # fmt: skip

    result = run(fake_openai, ws, tmp_path, "--verify", VERIFY, "--attempts", "2", "go")

    assert result.returncode == 0, result.stderr
    each = [tuple(map(int, m.groups())) for m in _STATUS.finditer(result.stderr)]
    assert [turns for turns, _, _ in each] == [3, 2], result.stderr
    turns, tokens_in, tokens_out = (sum(column) for column in zip(*each, strict=True))
    last = result.stderr.splitlines()[-1]
    assert last == f"  all 2 attempts: {turns} turns; tokens {tokens_in} in, {tokens_out} out"
