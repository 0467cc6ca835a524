"""How a budget ends a `lathe run`, through the real CLI against the fake server:

- a cost budget summed in floats missed its exact value and paid one more request.
"""

from __future__ import annotations

from tests.e2e.test_budgets import PRICED, TASK, _events, _workspace, lathe_run
from tests.fakes.openai_server import Call, Reply


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
