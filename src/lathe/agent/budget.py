"""Budgets of a run beyond its turns: tokens, dollars and wall time.

`RunBudget` holds the limits (None: no limit) and answers one question,
`exceeded(usage, cost, elapsed)`: the reason the run must stop, in words that name the
budget and the figure ("the cost budget ($0.50) was reached: $0.52 spent"), or None
while every limit holds. A limit counts as reached at its value, not only beyond it.

What counts:
- tokens: input + output + cache reads + cache writes of the run's model replies (the
  usage convention of `lathe.types.Usage`: input excludes the cached tokens, so nothing
  is counted twice);
- cost: the catalog price of those replies; None when the model has no prices, and then
  a cost limit cannot be judged (the faces refuse one up front);
- elapsed: wall time since the run started, in seconds.

`earlier` is what earlier runs of the same command spent (the attempts of one `lathe run
--attempts N`): it counts against the limits, so a budget bounds the whole command.
`BudgetGuard` is the finish handler that applies it: the token and cost limits are
judged before each model request, and the time limit is a deadline over the whole run.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING

from lathe.agent.finish import Finish, FinishHandler, RunState, TimeLimit
from lathe.events import RunError, RunStatus

if TYPE_CHECKING:
    from collections.abc import Callable

    from lathe.types import Usage


@dataclass(frozen=True)
class Spend:
    """What has been spent: tokens, dollars (None: unknown) and seconds."""

    tokens: int = 0
    cost_usd: float | None = 0.0
    elapsed_s: float = 0.0

    def plus(self, tokens: int, cost_usd: float | None, elapsed_s: float) -> Spend:
        cost = None if cost_usd is None or self.cost_usd is None else self.cost_usd + cost_usd
        return Spend(self.tokens + tokens, cost, self.elapsed_s + elapsed_s)


@dataclass(frozen=True)
class RunBudget:
    """The limits of one run; None means no limit of that kind."""

    max_cost_usd: float | None = None
    max_tokens: int | None = None
    timeout_s: float | None = None
    earlier: Spend = field(default_factory=Spend)
    # A subagent's: what the whole run has spent so far, its own replies and every other
    # agent's included, judged instead of its own spend (elapsed time stays its own).
    # Each child given all of the run's budget, a $0.50 run spent $2.00.
    shared: Callable[[], Spend] | None = field(default=None, compare=False)
    # A subagent's own cap (`agents.max_tokens`), judged on its own spend alone, beside
    # the run's limits judged on the whole run's.
    own_max_tokens: int | None = None

    @property
    def limited(self) -> bool:
        limits = (self.max_cost_usd, self.max_tokens, self.timeout_s, self.own_max_tokens)
        return any(x is not None for x in limits)

    def exceeded(self, usage: Usage, cost: float | None, elapsed: float) -> str | None:
        """Why the run must stop now, or None. `usage` and `cost` are this run's so far
        (cost None: unknown, which no cost limit can judge), `elapsed` its seconds."""
        if (over := self.spending_exceeded(usage, cost)) is not None:
            return over
        if self.timeout_s is not None and self.earlier.elapsed_s + elapsed >= self.timeout_s:
            return self.out_of_time(elapsed)
        return None

    def spending_exceeded(self, usage: Usage, cost: float | None) -> str | None:
        """Why the run must stop now for its tokens or cost, or None; time aside (the
        deadline's: `BudgetGuard.time_limit`)."""
        spent = self.earlier.plus(tokens_of(usage), cost, 0.0)
        if self.own_max_tokens is not None and spent.tokens >= self.own_max_tokens:
            return (
                f"the subagent's token budget ({self.own_max_tokens:,}, agents.max_tokens) was "
                f"reached: {spent.tokens:,} tokens used"
            )
        if self.shared is not None:
            tree = self.shared()
            spent = Spend(tree.tokens, tree.cost_usd if cost is not None else None, spent.elapsed_s)
        cost_limit, spent_usd = self.max_cost_usd, spent.cost_usd
        if cost_limit is not None and spent_usd is not None and cost_reached(spent_usd, cost_limit):
            return (
                f"the cost budget ({dollars(cost_limit)}) was reached: {dollars(spent_usd)} spent"
            )
        if self.max_tokens is not None and spent.tokens >= self.max_tokens:
            return (
                f"the token budget ({self.max_tokens:,}) was reached: {spent.tokens:,} tokens used"
            )
        return None

    @property
    def earlier_heard(self) -> bool:
        """Whether the model answered an earlier attempt: tokens are counted only from
        its replies (estimated when a server sends no usage)."""
        return self.earlier.tokens > 0

    def time_left(self) -> float | None:
        """Seconds a run starting now may take (never negative); None: no time limit."""
        if self.timeout_s is None:
            return None
        return max(0.0, self.timeout_s - self.earlier.elapsed_s)

    def out_of_time(self, elapsed: float) -> str:
        """The reason for a run this budget's deadline cut after `elapsed` seconds."""
        assert self.timeout_s is not None
        total = self.earlier.elapsed_s + elapsed
        return (
            f"the time budget ({duration(self.timeout_s)}) was reached: {duration(total)} elapsed"
        )

    def after(self, spent: Spend) -> RunBudget:
        """The same limits, with `spent` counted as already used (by an earlier attempt)."""
        earlier = self.earlier.plus(spent.tokens, spent.cost_usd, spent.elapsed_s)
        return replace(self, earlier=earlier)


# How far below a cost limit a sum may fall by float rounding alone and still reach it:
# far below any price a reply has ($0.10 ten times is $0.9999999999999999).
_ROUNDING_USD = 1e-9


def cost_reached(spent_usd: float, limit_usd: float) -> bool:
    """Whether `spent_usd` reaches the cost limit `limit_usd`: at its value, not only
    beyond it, rounding in the sum of the prices aside."""
    return spent_usd >= limit_usd - _ROUNDING_USD


def tokens_of(usage: Usage) -> int:
    """The tokens a budget counts for `usage`: every kind, input, output and cache."""
    return usage.total


def dollars(amount: float) -> str:
    """$0.50, $2.00; four decimals when two would hide the amount ($0.0042), and two
    significant digits when four would show an amount above zero as none ($0.000012)."""
    if abs(amount - round(amount, 2)) < 1e-9:
        return f"${amount:,.2f}"
    if abs(amount) >= 0.00005:
        return f"${amount:,.4f}"
    digits = 1 - math.floor(math.log10(abs(amount)))
    return f"${amount:.{digits}f}".rstrip("0")


def duration(seconds: float) -> str:
    """90 -> "1m30s", 3600 -> "1h", 8.02 -> "8s", 2.5 -> "2.5s" (forms `agent.timeout`
    takes)."""
    if seconds < 10 and not float(round(seconds, 1)).is_integer():
        return f"{seconds:.1f}s"
    whole = math.floor(seconds + 0.5)
    hours, rest = divmod(whole, 3600)
    minutes, secs = divmod(rest, 60)
    parts = [f"{hours}h" if hours else "", f"{minutes}m" if minutes else ""]
    parts.append(f"{secs}s" if secs or not (hours or minutes) else "")
    return "".join(parts)


class BudgetGuard(FinishHandler):
    """Ends the run `out_of_budget` when a budget is reached: tokens and cost before
    each model request (the reply that reached it keeps its calls, which cost no
    tokens), time as a deadline over the whole run. A deadline that cuts a model request
    that was failing keeps its error, and one that passes before the model ever answered
    (in this attempt, nor in any earlier one) ends the run `provider_error`: an outage,
    not a task the model could not do."""

    def __init__(self, budget: RunBudget, *, priced: bool) -> None:
        self._budget = budget
        self._priced = priced

    def time_limit(self, run: RunState) -> TimeLimit | None:
        seconds = self._budget.time_left()
        if seconds is None:
            return None
        budget = self._budget

        def end(elapsed: float) -> Finish:
            """`out_of_budget`, with the error the model request in flight last failed
            with; `provider_error` when a request was made and the model never answered,
            in any attempt (the run measured nothing: `lathe batch --retry-errors` runs
            it again)."""
            reason = budget.out_of_time(elapsed)
            spent = run.spent
            failing = spent.failing if spent is not None else None
            if failing is not None:
                reason = f"{reason}, the model's endpoint failing: {failing}"
            if run.turn == 0 or spent is None or spent.heard or budget.earlier_heard:
                error = RunError.from_provider_error(failing) if failing else None
                return Finish(RunStatus.OUT_OF_BUDGET, reason=reason, error=error)
            if failing is None:
                reason = (
                    f"{reason}, with no reply from the model: check that its server is up "
                    "and answering, or give the run more time (--timeout)"
                )
                error = RunError(kind="transport", message=reason)
            else:
                error = RunError.from_provider_error(failing)
            return Finish(RunStatus.PROVIDER_ERROR, reason=reason, error=error)

        return TimeLimit(seconds, end)

    def before_request(self, run: RunState) -> Finish | None:
        """`out_of_budget` when the tokens or the cost reached their limit; never for
        time, which is the deadline's alone: the spend clock starts before the deadline's
        timer, and an end here goes through `ending`, whose check the deadline would cut
        at once."""
        spent = run.spent
        if spent is None:
            return None
        cost = spent.cost_usd if self._priced else None
        over = self._budget.spending_exceeded(spent.usage, cost)
        return Finish(RunStatus.OUT_OF_BUDGET, reason=over) if over else None
