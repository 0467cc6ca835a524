"""A budget's end before a model request is one of tokens or cost, never of time: the
spend clock starts before the deadline's timer, so a time end could reach `ending`,
whose check the deadline then cut at once. Time is the deadline's alone."""

from __future__ import annotations

import time

from lathe.agent.budget import BudgetGuard, RunBudget, Spend
from lathe.agent.finish import RunState
from lathe.agent.loop import RunSpending


def test_before_a_request_time_is_left_to_the_deadline():
    guard = BudgetGuard(RunBudget(timeout_s=5.0), priced=False)
    spent = RunSpending(started=time.monotonic() - 60)

    assert guard.before_request(RunState(emit=lambda event: None, spent=spent)) is None


def test_before_a_request_tokens_and_cost_still_end_the_run():
    guard = BudgetGuard(RunBudget(max_cost_usd=0.5, timeout_s=5.0), priced=True)
    spent = RunSpending(cost_usd=0.75, started=time.monotonic() - 60)

    end = guard.before_request(RunState(emit=lambda event: None, spent=spent))

    assert end is not None and end.reason.startswith("the cost budget ($0.50) was reached")


def test_time_spent_by_earlier_attempts_is_left_to_the_deadline_too():
    budget = RunBudget(timeout_s=5.0).after(Spend(elapsed_s=9.0))
    guard = BudgetGuard(budget, priced=False)

    assert guard.before_request(RunState(emit=lambda event: None, spent=RunSpending())) is None
