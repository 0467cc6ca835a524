"""A compaction's summary requests are model requests the run pays for: `lathe run`
reports each (`model_request`) and counts its tokens and cost in the run's usage and
against `--max-tokens` and `--max-cost` (not against `--max-turns`). They had been left
out: two summaries priced at ~$4.50 in a run that said it spent $0.10 under
`--max-cost 1`."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

from tests.fakes.openai_server import Call, Reply

LOGS = 6
SUMMARY_USAGE = {"prompt_tokens": 500_000, "completion_tokens": 100_000, "total_tokens": 600_000}
SUMMARY_COST = 500_000 * 2.50 / 1e6 + 100_000 * 10.00 / 1e6  # gpt-4o's catalog prices


def log_reader(ws: Path, logs: int, summary_usage: dict[str, int]) -> Callable[[dict], Reply]:
    """A responder for a run that reads `logs` log files it writes into `ws`, big enough
    to make a 12,000-token window compact: each summary request is answered with
    `summary_usage`, each turn with about what a server would count."""
    for n in range(logs):
        (ws / f"log{n}.txt").write_text(f"entry {n}\n" * 800)
    reads = iter(range(logs))

    def respond(body):
        if not body.get("tools"):
            return Reply("Goal: read the logs. Progress: some read.", usage=summary_usage)
        size = len(json.dumps(body)) // 3
        usage = {"prompt_tokens": size, "completion_tokens": 20, "total_tokens": size + 20}
        n = next(reads, None)
        if n is None:
            return Reply("All logs read.", usage=usage)
        return Reply(calls=[Call("read", {"path": f"log{n}.txt"})], usage=usage)

    return respond


def _compacting_run(tmp_path: Path, server, *args: str) -> subprocess.CompletedProcess:
    """A run in a 12,000-token window whose reads make it compact (`log_reader`)."""
    ws = tmp_path / "ws"
    ws.mkdir()
    server.responder = log_reader(ws, LOGS, SUMMARY_USAGE)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("LATHE_", "OPENAI_"))}
    env.update(OPENAI_API_KEY="sk-test", LATHE_HOME=str(tmp_path / "home"))
    return subprocess.run(
        [sys.executable, "-m", "lathe", "run", "--json", "--model", "gpt-4o", "--base-url",
         server.base_url, "-C", str(ws), "-c", "models.gpt-4o.context_window=12000",
         *args, "Read the logs"],
        cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120,
        stdin=subprocess.DEVNULL,
    )  # fmt: skip


def _events(result: subprocess.CompletedProcess) -> list[dict]:
    return [json.loads(line) for line in result.stdout.splitlines()]


def test_the_cost_budget_counts_the_summary_requests(tmp_path, fake_openai):
    result = _compacting_run(tmp_path, fake_openai, "--max-cost", "1")

    assert result.returncode == 1, result.stderr
    events = _events(result)
    finished = events[-1]
    assert finished["status"] == "out_of_budget", finished
    assert finished["reason"].startswith("the cost budget ($1.00) was reached"), finished
    summaries = [b for b in fake_openai.chat_bodies() if not b.get("tools")]
    assert len(summaries) == 1  # the budget stopped the run before another
    assert finished["cost_usd"] >= SUMMARY_COST
    assert finished["usage"]["input_tokens"] >= SUMMARY_USAGE["prompt_tokens"]


def test_each_summary_request_is_reported_and_counted_but_is_no_turn(tmp_path, fake_openai):
    result = _compacting_run(tmp_path, fake_openai)

    assert result.returncode == 0, result.stderr
    events = _events(result)
    finished = events[-1]
    bodies = fake_openai.chat_bodies()
    summaries = [b for b in bodies if not b.get("tools")]
    assert summaries, "the run never compacted"
    requests = [e for e in events if e["type"] == "model_request"]
    assert len(requests) == len(bodies)
    reported = [e for e in requests if e["parameters"]["tools"] == 0]
    assert len(reported) == len(summaries)
    assert all(e["usage"]["input_tokens"] == 500_000 for e in reported)
    assert finished["turns"] == len(bodies) - len(summaries)
    assert finished["usage"]["input_tokens"] == sum(e["usage"]["input_tokens"] for e in requests)
    assert abs(finished["cost_usd"] - sum(e["cost_usd"] for e in requests)) < 1e-9
