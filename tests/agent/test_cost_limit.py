"""A cost limit counts as reached at its value: ten $0.10 replies summed in floats are
$0.9999999999999999, which missed a $1.00 limit and paid for an eleventh request (and
let a batch start one more task past --max-total-cost)."""

from __future__ import annotations

from lathe.agent.budget import RunBudget, cost_reached
from lathe.batch.driver import Batch, BatchOptions
from lathe.batch.task_run import RunSettings
from lathe.types import Usage

TEN_DIMES = sum([0.1] * 10)


def test_the_float_sum_falls_short_of_the_limit():
    assert TEN_DIMES < 1.0  # what the limits must not be fooled by


def test_a_sum_short_of_the_limit_by_rounding_alone_reaches_it():
    assert cost_reached(TEN_DIMES, 1.0)
    assert cost_reached(1.0, 1.0)
    assert not cost_reached(0.999999, 1.0)  # a real shortfall, however small a price


def test_the_runs_cost_budget_is_reached_by_ten_dimes():
    reason = RunBudget(max_cost_usd=1.0).exceeded(Usage(), TEN_DIMES, 0.0)

    assert reason == "the cost budget ($1.00) was reached: $1.00 spent"


def test_the_batchs_total_cost_is_reached_by_ten_dimes(tmp_path):
    options = BatchOptions(
        tasks=[], source="-", out=tmp_path, settings=RunSettings(), model="m",
        max_total_cost=1.0,
    )  # fmt: skip
    batch = Batch(options, executor=None, face=None)  # type: ignore[arg-type]
    batch._recorded = [{"cost_usd": 0.1} for _ in range(10)]

    assert batch._over_budget() == "the batch's cost limit ($1) is spent"
