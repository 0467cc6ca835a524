"""`lathe run` against servers whose usage says nothing (missing, empty, all zeros) or
nonsense (negative counts): the run's tokens and cost are estimated from what was sent
and received, never below zero, so `--max-tokens` and `--max-cost` still end the run.

They had counted 0 tokens (Anthropic `usage: {}`: "tokens 0 in, 0 out; cost $0.0000"
after ~900 KB sent; OpenAI `usage: {}` or zeros) or gone negative (Anthropic
`input_tokens: -100000000`: "cost $-291.0000"), and no budget ever tripped."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from tests.fakes import anthropic_server as claude
from tests.fakes.openai_server import Call, Reply

READS = 8  # replies each reading a 30 KB file: far past 20k tokens by the fourth request
NOTHING: dict[str, int] = {}
ZEROS = {"prompt_tokens": 0, "completion_tokens": 0, "total_tokens": 0}
NEGATIVE = {"input_tokens": -100_000_000, "output_tokens": -10_000_000,
            "cache_creation_input_tokens": 0, "cache_read_input_tokens": 0}  # fmt: skip
# $1.50 a reply at claude-sonnet-4's catalog prices ($3 a million in).
PRICEY = {"input_tokens": 500_000, "output_tokens": 0,
          "cache_creation_input_tokens": 0, "cache_read_input_tokens": 0}  # fmt: skip


def _workspace(tmp_path: Path) -> Path:
    ws = tmp_path / "ws"
    ws.mkdir()
    for n in range(READS):
        (ws / f"log{n}.txt").write_text(f"line {n} of the log\n" * 1_500)
    return ws


def _lathe(tmp_path: Path, ws: Path, base_url: str, *args: str) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("LATHE_", "OPENAI_"))}
    env.update(OPENAI_API_KEY="sk-test", ANTHROPIC_API_KEY="sk-ant-test")
    env.update(LATHE_HOME=str(tmp_path / "home"))
    return subprocess.run(
        [sys.executable, "-m", "lathe", "run", "--json", "--base-url", base_url,
         "-C", str(ws), *args, "Read the logs"],
        cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120,
        stdin=subprocess.DEVNULL,
    )  # fmt: skip


def _finished(result: subprocess.CompletedProcess) -> dict:
    events = [json.loads(line) for line in result.stdout.splitlines()]
    assert events and events[-1]["type"] == "run_finished", result.stderr
    return events[-1]


def _assert_stopped_by(result: subprocess.CompletedProcess, budget: str) -> dict:
    assert result.returncode == 1, result.stderr
    finished = _finished(result)
    assert finished["status"] == "out_of_budget"
    assert finished["reason"].startswith(f"the {budget} budget"), finished["reason"]
    assert all(count >= 0 for count in finished["usage"].values()), finished["usage"]
    return finished


@pytest.mark.parametrize("usage", [NOTHING, ZEROS], ids=["empty", "zeros"])
def test_openai_usage_of_nothing_is_estimated_and_the_token_budget_ends_the_run(
    tmp_path, fake_openai, usage
):
    ws = _workspace(tmp_path)
    reads = [
        Reply(calls=[Call("read", {"path": f"log{n}.txt"})], usage=usage) for n in range(READS)
    ]
    fake_openai.enqueue(*reads, Reply("All read.", usage=usage))

    result = _lathe(tmp_path, ws, fake_openai.base_url, "--model", "gpt-4o", "--max-tokens", "20k")

    finished = _assert_stopped_by(result, "token")
    assert finished["usage"]["input_tokens"] >= 20_000
    assert len(fake_openai.chat_bodies()) < READS


def test_anthropic_usage_of_nothing_is_estimated_and_the_budgets_end_the_run(
    tmp_path, fake_anthropic
):
    ws = _workspace(tmp_path)
    reads = [
        claude.Reply(calls=[claude.ToolUse("read", {"path": f"log{n}.txt"})], usage=NOTHING)
        for n in range(READS)
    ]
    fake_anthropic.enqueue(*reads, claude.Reply("All read.", usage=NOTHING))

    result = _lathe(
        tmp_path, ws, fake_anthropic.base_url, "--model", "claude-sonnet-4",
        "--max-tokens", "20k", "--max-cost", "5",
    )  # fmt: skip

    finished = _assert_stopped_by(result, "token")
    assert finished["usage"]["input_tokens"] >= 20_000
    assert finished["cost_usd"] > 0
    assert len(fake_anthropic.message_bodies()) < READS


def test_anthropic_negative_usage_counts_as_none_and_the_cost_budget_ends_the_run(
    tmp_path, fake_anthropic
):
    ws = _workspace(tmp_path)
    fake_anthropic.enqueue(
        claude.Reply(calls=[claude.ToolUse("read", {"path": "log0.txt"})], usage=NEGATIVE),
        *(
            claude.Reply(calls=[claude.ToolUse("read", {"path": f"log{n}.txt"})], usage=PRICEY)
            for n in range(1, READS)
        ),
        claude.Reply("All read.", usage=PRICEY),
    )

    result = _lathe(
        tmp_path, ws, fake_anthropic.base_url, "--model", "claude-sonnet-4", "--max-cost", "1"
    )

    finished = _assert_stopped_by(result, "cost")
    assert finished["cost_usd"] >= 1
    assert len(fake_anthropic.message_bodies()) == 2
