"""The run budgets in the faces: `--max-cost`, `--max-tokens` and `--timeout` into
config keys, the budget a run gets, the refusal of a cost budget no price can judge, and
the spend shown against a budget.

The limits themselves and what counts against them are `lathe.agent.budget`'s.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from lathe.errors import UsageError

if TYPE_CHECKING:
    from lathe.agent.budget import RunBudget
    from lathe.config import LoadedConfig, ResolvedModel
    from lathe.config.schema import AgentConfig
    from lathe.types import Usage
    from lathe.ui.setup import RunOptions


def budget_flags(options: RunOptions) -> dict[str, object]:
    """The budget options as config flags, parsed here so that a bad value is refused
    naming the option the user typed (the config layer would name the key)."""
    from lathe.config.schema import parse_dollars, parse_duration, parse_tokens

    given: list[tuple[str, str, str | None, Callable[[object], object]]] = [
        ("--max-cost", "agent.max_cost_usd", options.max_cost, parse_dollars),
        ("--max-tokens", "agent.max_tokens", options.max_tokens, parse_tokens),
        ("--timeout", "agent.timeout", options.timeout, parse_duration),
    ]
    flags: dict[str, object] = {}
    for option, key, text, parse in given:
        if text is None:
            continue
        try:
            flags[key] = parse(text)
        except ValueError as exc:
            raise UsageError(f"{option}: {exc}") from None
    return flags


def check_cost_budget(loaded: LoadedConfig, model: ResolvedModel) -> None:
    """A cost budget needs prices: refuse one for a model the catalog has none for
    (its cost is unknown, not zero, so the budget could never be reached)."""
    from lathe.agent.budget import dollars
    from lathe.config.keys import format_key

    limit = loaded.config.agent.max_cost_usd
    if limit is None or model.prices.known:
        return
    origin = loaded.origin("agent.max_cost_usd")
    given = "--max-cost" if origin == "flag" else f"agent.max_cost_usd, {origin}"
    label = model.name or model.model_id
    raise UsageError(
        f"the cost budget ({dollars(limit)}, {given}) needs the model's prices, and there "
        f"are no prices for {label} in the model catalog: give them in its "
        f"[{format_key(('models', label))}] table (provider, input_price and output_price, "
        "US dollars per million tokens), or limit the run with --max-tokens instead"
    )


def run_budget(agent: AgentConfig) -> RunBudget | None:
    """The budget the config sets for each run; None when it sets none."""
    from lathe.agent.budget import RunBudget

    budget = RunBudget(
        max_cost_usd=agent.max_cost_usd, max_tokens=agent.max_tokens, timeout_s=agent.timeout
    )
    return budget if budget.limited else None


def spend_text(budget: RunBudget, usage: Usage, cost: float | None, elapsed: float | None) -> str:
    """What a run has spent against each limit of `budget`, e.g. "$0.12 of $0.50 · 12k of
    50k tokens · 1m5s of 10m"; the time only while the run goes (`elapsed` not None)."""
    from lathe.agent.budget import dollars, duration, tokens_of

    parts = []
    if budget.max_cost_usd is not None and cost is not None:
        parts.append(f"{dollars(cost)} of {dollars(budget.max_cost_usd)}")
    if budget.max_tokens is not None:
        parts.append(f"{_thousands(tokens_of(usage))} of {_thousands(budget.max_tokens)} tokens")
    if budget.timeout_s is not None and elapsed is not None:
        parts.append(f"{duration(elapsed)} of {duration(budget.timeout_s)}")
    return " · ".join(parts)


def _thousands(n: int) -> str:
    """12345 -> "12.3k", 50000 -> "50k", 900 -> "900"."""
    if n < 1000:
        return str(n)
    if n >= 1_000_000:
        return f"{n / 1_000_000:.1f}".removesuffix(".0") + "M"
    return f"{n / 1000:.1f}".removesuffix(".0") + "k"
