"""How a budget ends a `lathe run`, through the real CLI against the fake server:

- a token or cost budget reached right after the fixing step ended `out_of_budget`
  without running the check: the fixed task counted failed in CI and unsolved by batch;
- a time budget that ran out during a later attempt's first request was reported as a
  provider outage (exit 3), though the model had answered every earlier request;
- a cost budget summed in floats missed its exact value and paid one more request;
- a check cut by the time budget left `verify_started` without its `verify_finished`.
"""

from __future__ import annotations

import pytest
from tests.e2e.test_budgets import PRICED, TASK, USAGE, VERIFY, _events, _workspace, lathe_run
from tests.fakes.openai_server import Call, Reply

FIXED = "value = 2\nprint(value)\n"


def _edit_then_done(new_value: str) -> list[Reply]:
    edit = {"path": "app.py", "old_string": "value = 1", "new_string": f"value = {new_value}"}
    return [Reply(calls=[Call("edit", edit)], usage=USAGE), Reply("done", usage=USAGE)]


@pytest.mark.parametrize(
    "budget, said",
    [(["--max-tokens", "1200"], "the token budget (1,200) was reached"),
     ([*PRICED, "--max-cost", "0.2"], "the cost budget ($0.20) was reached")],
)  # fmt: skip
def test_a_budget_reached_right_after_the_fix_checks_it_before_ending(
    tmp_path, fake_openai, budget, said
):
    ws = _workspace(tmp_path)
    fake_openai.enqueue(*_edit_then_done("2"))

    result = lathe_run(fake_openai, ws, tmp_path, "--json", "--verify", VERIFY, *budget, TASK)

    assert result.returncode == 0, result.stderr
    assert (ws / "app.py").read_text() == FIXED
    events = _events(result)
    checks = [e["passed"] for e in events if e["type"] == "verify_finished"]
    assert checks == [False, True]  # the baseline, then the change
    finished = events[-1]
    assert finished["status"] == "verified", finished
    assert finished["reason"].startswith(said), finished["reason"]
    assert "the check passed" in finished["reason"], finished["reason"]
    assert len(fake_openai.chat_bodies()) == 1  # the budget still stopped the next request


def test_a_budget_reached_after_a_change_the_check_fails_ends_failed(tmp_path, fake_openai):
    ws = _workspace(tmp_path)
    fake_openai.enqueue(*_edit_then_done("3"))

    result = lathe_run(
        fake_openai, ws, tmp_path, "--json", "--verify", VERIFY, "--max-tokens", "1200", TASK
    )

    assert result.returncode == 1, result.stderr
    events = _events(result)
    checks = [e["passed"] for e in events if e["type"] == "verify_finished"]
    assert checks == [False, False]
    finished = events[-1]
    assert finished["status"] == "failed", finished
    assert finished["reason"].startswith("the token budget (1,200) was reached"), finished
    assert "the check failed" in finished["reason"], finished["reason"]


def test_a_budget_reached_with_nothing_changed_is_not_checked_again(tmp_path, fake_openai):
    ws = _workspace(tmp_path)
    fake_openai.enqueue(Reply(calls=[Call("read", {"path": "app.py"})], usage=USAGE))

    result = lathe_run(
        fake_openai, ws, tmp_path, "--json", "--verify", VERIFY, "--max-tokens", "1200", TASK
    )

    assert result.returncode == 1, result.stderr
    events = _events(result)
    assert len([e for e in events if e["type"] == "verify_finished"]) == 1  # the baseline
    assert events[-1]["status"] == "out_of_budget"


@pytest.mark.waits
def test_a_time_budget_cutting_a_later_attempts_first_request_is_out_of_budget(
    tmp_path, fake_openai
):
    # Attempts 1 and 2 are answered at once; attempt 3's reply has not begun when the
    # time budget is reached.
    requests = iter(range(1, 100))

    def respond(body):
        late = next(requests) >= 3
        return Reply(calls=[Call("read", {"path": "app.py"})], stall_after=0, stall_s=60 * late)

    fake_openai.responder = respond
    ws = _workspace(tmp_path)

    result = lathe_run(
        fake_openai, ws, tmp_path, "--json", "--verify", "false", "--attempts", "3",
        "--max-turns", "1", "--timeout", "7s", TASK,
    )  # fmt: skip

    events = _events(result)
    ends = [e["status"] for e in events if e["type"] == "run_finished"]
    assert ends == ["max_turns", "max_turns", "out_of_budget"], events[-1]
    assert result.returncode == 1, result.stderr
    assert events[-1]["error"] is None
    assert events[-1]["reason"].startswith("the time budget (7s) was reached")


def test_a_cost_budget_is_reached_at_its_exact_value(tmp_path, fake_openai):
    # $0.10 a request: ten of them reach $1.00, which summed in floats is 0.9999999999999999.
    usage = {"prompt_tokens": 1000, "completion_tokens": 0, "total_tokens": 1000}
    turn = iter(range(1, 100))
    fake_openai.responder = lambda body: Reply(
        calls=[Call("bash", {"command": f"echo {next(turn)}"})], usage=usage
    )
    ws = _workspace(tmp_path)

    result = lathe_run(
        fake_openai, ws, tmp_path, "--json", "--approval", "full", *PRICED, "--max-cost", "1",
        TASK,
    )  # fmt: skip

    assert result.returncode == 1, result.stderr
    finished = _events(result)[-1]
    assert finished["status"] == "out_of_budget"
    assert finished["reason"] == "the cost budget ($1.00) was reached: $1.00 spent"
    assert len(fake_openai.chat_bodies()) == 10


@pytest.mark.waits
@pytest.mark.parametrize("as_json", [True, False])
def test_a_check_cut_by_the_time_budget_still_finishes(tmp_path, fake_openai, as_json):
    fake_openai.responder = lambda body: Reply("done")
    ws = _workspace(tmp_path)

    result = lathe_run(
        fake_openai, ws, tmp_path, *(["--json"] if as_json else []), "--verify",
        "echo checking; sleep 30", "-c", "agent.verify_first=false", "--timeout", "4s", TASK,
    )  # fmt: skip

    assert result.returncode == 1, result.stderr
    if not as_json:
        assert "  verify failed (cut after " in result.stderr, result.stderr
        return
    events = _events(result)
    types = [e["type"] for e in events]
    assert types[-3:] == ["verify_started", "verify_finished", "run_finished"], types
    cut = events[-2]
    assert cut["exit_code"] is None and cut["passed"] is False, cut
    assert cut["timed_out"] is False  # not its own time limit (agent.verify_timeout_s)
    assert cut["duration_ms"] >= 1000, cut
    assert events[-1]["status"] == "out_of_budget"
