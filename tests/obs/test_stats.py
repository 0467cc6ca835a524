"""`lathe stats` over real runs, and the aggregation over hand-written logs."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta

import pytest
from tests.fakes.openai_server import Call, Reply
from tests.obs.conftest import PRICED_MODEL, lathe

from lathe.errors import UsageError
from lathe.obs.stats import collect, parse_since

USAGE = {"prompt_tokens": 100, "completion_tokens": 10, "total_tokens": 110}


def _run(fake, workspace, home, *replies: Reply, extra: tuple[str, ...] = ()) -> None:
    fake.enqueue(*replies)
    result = lathe(
        "run",
        *PRICED_MODEL,
        "--base-url",
        fake.base_url,
        "-C",
        str(workspace),
        *extra,
        "go",
        cwd=workspace,
        env={"OPENAI_API_KEY": "sk-test", "LATHE_HOME": str(home)},
    )
    assert result.returncode in (0, 1), result.stderr


def test_stats_over_a_couple_of_runs(tmp_path, workspace, home, fake_openai):
    _run(
        fake_openai,
        workspace,
        home,
        Reply(calls=[Call("bash", {"command": "exit 1"})], usage=USAGE),
        Reply(calls=[Call("bash", {"command": "true"}), Call("ls", {})], usage=USAGE),
        Reply("done", usage=USAGE),
    )
    _run(
        fake_openai,
        workspace,
        home,
        Reply(calls=[Call("read", {"path": "nope.txt"})], usage=USAGE),
        extra=("--max-turns", "1"),
    )
    other = tmp_path / "other"
    other.mkdir()
    _run(fake_openai, other, home, Reply("hi", usage=USAGE))
    env = {"LATHE_HOME": str(home), "NO_COLOR": "1"}

    data = json.loads(lathe("stats", "--json", "-C", str(workspace), cwd=tmp_path, env=env).stdout)
    assert data["sessions"] == 2
    assert data["runs"] == {"unverified": 1, "max_turns": 1}
    assert data["requests"] == 4
    assert data["tokens"]["input"] == 400 and data["tokens"]["output"] == 40
    assert data["cost_usd"] == pytest.approx(4 * (100 * 1.0 + 10 * 2.0) / 1e6)
    assert data["tools"]["bash"]["calls"] == 2 and data["tools"]["bash"]["failures"] == 1
    assert data["tools"]["bash"]["failure_rate"] == 0.5
    assert data["tools"]["read"] == pytest.approx(
        {
            "calls": 1,
            "failures": 1,
            "failure_rate": 1.0,
            "mean_ms": data["tools"]["read"]["mean_ms"],
            "max_ms": data["tools"]["read"]["max_ms"],
        }
    )
    assert data["tools"]["ls"]["failures"] == 0
    slowest = [call["duration_ms"] for call in data["slowest"]]
    assert slowest == sorted(slowest, reverse=True) and len(slowest) == 4

    everywhere = json.loads(lathe("stats", "--json", "--all", cwd=tmp_path, env=env).stdout)
    assert everywhere["sessions"] == 3 and everywhere["requests"] == 5

    table = lathe("stats", "-C", str(workspace), "--since", "1h", cwd=tmp_path, env=env)
    assert table.returncode == 0, table.stderr
    assert "\x1b[" not in table.stdout  # NO_COLOR
    for expected in ("runs", "2 (", "unverified 1", "max_turns 1", "400 in, 40 out", "$0.0005"):
        assert expected in table.stdout
    assert "bash" in table.stdout and "50%" in table.stdout
    assert "slowest tool calls" in table.stdout


def test_stats_without_logs_and_with_a_bad_since(tmp_path):
    env = {"LATHE_HOME": str(tmp_path / "empty")}
    empty = lathe("stats", cwd=tmp_path, env=env)
    assert empty.returncode == 0
    assert "No session logs" in empty.stdout
    bad = lathe("stats", "--since", "yesterday", cwd=tmp_path, env=env)
    assert bad.returncode == 2
    assert "30m, 12h, 7d or 2w" in bad.stderr


def test_collect_counts_unfinished_runs_skips_garbage_and_honours_since(tmp_path):
    now = datetime.now(UTC)
    old = (now - timedelta(days=10)).isoformat()
    recent = now.isoformat()
    lines = [
        {"ts": old, "kind": "run_start"},
        {"ts": old, "kind": "model_request", "usage": {"input_tokens": 7}, "cost_usd": 1.0},
        {"ts": old, "kind": "run_end", "status": "verified"},
        {"ts": recent, "kind": "run_start"},
        {"ts": recent, "kind": "retry", "attempt": 1},
        {
            "ts": recent,
            "kind": "model_request",
            "usage": {"input_tokens": 5},
            "cost_usd": None,
            "retries": 1,
        },  # the same retry as the line before, not another
        {"ts": recent, "kind": "tool_call", "name": "bash", "duration_ms": 12.5, "ok": False},
    ]
    log = tmp_path / "x.log"
    log.write_text("\n".join(json.dumps(line) for line in lines) + "\n{torn line")

    everything = collect([log])
    assert everything.runs == {"verified": 1, "unfinished": 1}
    assert everything.input_tokens == 12
    assert everything.cost_usd == 1.0 and everything.unpriced_requests == 1
    assert everything.retries == 1

    lately = collect([log], since=now - timedelta(days=7))
    assert lately.runs == {"unfinished": 1}
    assert lately.input_tokens == 5 and lately.cost_usd == 0.0
    assert lately.tools["bash"].failure_rate == 1.0


def test_parse_since():
    assert parse_since("7d") == timedelta(days=7)
    assert parse_since("30m") == timedelta(minutes=30)
    assert parse_since("2W") == timedelta(weeks=2)
    with pytest.raises(UsageError, match="7d"):
        parse_since("7 days")


def test_stats_counts_every_retry_a_run_printed(tmp_path, workspace, home, fake_openai):
    from tests.fakes.openai_server import server_error

    busy = server_error(503, retry_after="0")
    env = {"OPENAI_API_KEY": "sk-test", "LATHE_HOME": str(home), "NO_COLOR": "1"}
    printed = 0
    # A request that answers after two retries, then one that gives up after two.
    for script, exit_code in (([busy, busy, Reply("done", usage=USAGE)], 0), ([busy] * 3, 3)):
        fake_openai.enqueue(*script)
        run = lathe(
            "run", *PRICED_MODEL, "--base-url", fake_openai.base_url, "-C", str(workspace),
            "-c", "retry.max_attempts=3", "go", cwd=workspace, env=env,
        )  # fmt: skip
        assert run.returncode == exit_code, run.stderr
        printed += sum(line.lstrip().startswith("retry ") for line in run.stderr.splitlines())
    assert printed == 4

    data = json.loads(lathe("stats", "--json", "-C", str(workspace), cwd=tmp_path, env=env).stdout)
    assert data["retries"] == printed
    assert data["runs"] == {"unverified": 1, "provider_error": 1}
    table = lathe("stats", "-C", str(workspace), cwd=tmp_path, env=env)
    assert f"{printed} retries" in table.stdout
