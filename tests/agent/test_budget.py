"""`RunBudget`: which limit a run's spend reaches, and the words that say so."""

from __future__ import annotations

import pytest

from lathe.agent.budget import RunBudget, Spend, dollars, duration
from lathe.agent.context import unanswered_calls
from lathe.types import AssistantMessage, ToolCall, ToolResultMessage, Usage, UserMessage


def _usage(tokens: int) -> Usage:
    return Usage(
        input_tokens=tokens - 10, output_tokens=4, cache_read_tokens=5, cache_write_tokens=1
    )


def test_no_limit_is_never_exceeded():
    budget = RunBudget()

    assert not budget.limited
    assert budget.exceeded(_usage(10**9), 10**6, 10**6) is None
    assert budget.time_left() is None


COST = "the cost budget ($0.50) was reached: "
TOKENS = "the token budget (50,000) was reached: 50,000 tokens used"
TIME = "the time budget (10m) was reached: 10m1s elapsed"


@pytest.mark.parametrize(
    ("budget", "usage", "cost", "elapsed", "reason"),
    [
        (RunBudget(max_cost_usd=0.5), _usage(10), 0.52, 1, COST + "$0.52 spent"),
        (RunBudget(max_cost_usd=0.5), _usage(10), 0.5, 1, COST + "$0.50 spent"),
        (RunBudget(max_cost_usd=0.5), _usage(10), 0.4999, 1, None),
        (RunBudget(max_cost_usd=0.5), _usage(10), None, 1, None),  # unknown: not judged
        (
            RunBudget(max_cost_usd=0.001), _usage(10), 0.0042, 1,
            "the cost budget ($0.0010) was reached: $0.0042 spent",
        ),
        # every kind of token counts: input, output, cache reads and writes
        (RunBudget(max_tokens=50_000), _usage(50_000), 0.0, 1, TOKENS),
        (RunBudget(max_tokens=50_000), _usage(49_999), 0.0, 1, None),
        (RunBudget(timeout_s=600), _usage(10), 0.0, 601.2, TIME),
        (RunBudget(timeout_s=600), _usage(10), 0.0, 599, None),
    ],
)  # fmt: skip
def test_each_limit_names_itself_and_the_figure(budget, usage, cost, elapsed, reason):
    assert budget.limited
    assert budget.exceeded(usage, cost, elapsed) == reason


def test_what_earlier_attempts_spent_counts_against_the_limits():
    budget = RunBudget(max_cost_usd=1.0, max_tokens=10_000, timeout_s=60)
    earlier = budget.after(Spend(tokens=9_000, cost_usd=0.25, elapsed_s=20))

    assert earlier.time_left() == 40
    assert earlier.exceeded(_usage(999), 0.5, 10) is None
    assert earlier.exceeded(_usage(1_000), 0.5, 10) == (
        "the token budget (10,000) was reached: 10,000 tokens used"
    )
    assert earlier.exceeded(_usage(10), 0.75, 10) == (
        "the cost budget ($1.00) was reached: $1.00 spent"
    )
    assert earlier.out_of_time(40.2) == "the time budget (1m) was reached: 1m elapsed"
    assert earlier.after(Spend(elapsed_s=50)).time_left() == 0


def test_an_unknown_earlier_cost_leaves_the_cost_unknown():
    budget = RunBudget(max_cost_usd=1.0).after(Spend(cost_usd=None))

    assert budget.exceeded(_usage(10), 5.0, 1) is None


@pytest.mark.parametrize(
    ("seconds", "shown"),
    [(8, "8s"), (8.02, "8s"), (2.5, "2.5s"), (90, "1m30s"), (600, "10m"), (3600, "1h"),
     (5400, "1h30m"), (3661, "1h1m1s"), (0.04, "0s")],
)  # fmt: skip
def test_durations_read_as_they_are_written(seconds, shown):
    assert duration(seconds) == shown


def test_dollars_keep_what_two_decimals_would_hide():
    assert [dollars(x) for x in (0.5, 2, 0.1 + 0.2, 0.0042, 1234.5)] == [
        "$0.50", "$2.00", "$0.30", "$0.0042", "$1,234.50",
    ]  # fmt: skip


def test_dollars_never_show_a_tiny_amount_as_zero():
    # `--max-cost 0.000001` had stopped a run at "the cost budget ($0.0000)".
    assert [dollars(x) for x in (0.000001, 0.0000123, 0.00004)] == [
        "$0.000001", "$0.000012", "$0.00004",
    ]  # fmt: skip


def test_unanswered_calls_are_those_of_the_last_reply_without_a_result():
    one, two = ToolCall(id="a", name="read", arguments="{}"), ToolCall(id="b", name="ls")
    answered = ToolResultMessage(tool_call_id="a", name="read", content="x")

    assert unanswered_calls([UserMessage(content="task")]) == []
    assert unanswered_calls([AssistantMessage(tool_calls=(one, two))]) == [one, two]
    assert unanswered_calls([AssistantMessage(tool_calls=(one, two)), answered]) == [two]
    assert unanswered_calls([AssistantMessage(text="done")]) == []
