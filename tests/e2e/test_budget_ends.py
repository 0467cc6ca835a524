"""How a budget ends a `lathe run`, through the real CLI against the fake server:

- a time budget that ran out during a later attempt's first request was reported as a
  provider outage (exit 3), though the model had answered every earlier request;
- a cost budget summed in floats missed its exact value and paid one more request.
"""

from __future__ import annotations

import pytest
from tests.e2e.test_budgets import PRICED, TASK, _events, _workspace, lathe_run
from tests.fakes.openai_server import Call, Reply


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
