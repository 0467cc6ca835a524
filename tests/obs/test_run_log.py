"""A real `lathe run` writes a structured log next to its session and reports its cost."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from tests.fakes.openai_server import Call, Reply
from tests.obs.conftest import PRICED_MODEL, lathe

USAGE_1 = {"prompt_tokens": 1000, "completion_tokens": 500, "total_tokens": 1500}
USAGE_2 = {"prompt_tokens": 2000, "completion_tokens": 100, "total_tokens": 2100}
# (1000 + 2000) input tokens at $1/M + (500 + 100) output tokens at $2/M
EXPECTED_COST = (3000 * 1.0 + 600 * 2.0) / 1_000_000


def _script() -> list[Reply]:
    return [
        Reply(
            "Looking.",
            calls=[
                Call("bash", {"command": "echo hi; exit 3"}),
                Call("write", {"path": "new.txt", "content": "SECRET-LOOKING FILE BODY " * 20}),
                Call("read", {"path": "missing.txt"}),
            ],
            usage=USAGE_1,
        ),
        Reply("All done.", usage=USAGE_2),
    ]


def _logs(home: Path) -> list[Path]:
    return sorted(home.glob("sessions/*/*.log"))


def _records(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def test_run_writes_request_and_tool_entries_next_to_the_session(workspace, home, fake_openai):
    fake_openai.enqueue(*_script())
    result = lathe(
        "run",
        *PRICED_MODEL,
        "--base-url",
        fake_openai.base_url,
        "-C",
        str(workspace),
        "go",
        cwd=workspace,
        env={"OPENAI_API_KEY": "sk-test-log-0000", "LATHE_HOME": str(home)},
    )
    assert result.returncode == 0, result.stderr

    [log] = _logs(home)
    [session] = sorted(home.glob("sessions/*/*.jsonl"))
    assert log.with_suffix(".jsonl") == session  # same stem, next to the session
    records = _records(log)
    assert [r["kind"] for r in records] == [
        "run_start",
        "model_request",
        "tool_call",
        "tool_call",
        "tool_call",
        "model_request",
        "run_end",
    ]
    session_id = session.stem.rpartition("_")[2]
    assert {r["session"] for r in records} == {session_id}

    first = records[1]
    assert first["model"] == "fake-model"
    assert first["turn"] == 1
    assert first["usage"]["input_tokens"] == 1000 and first["usage"]["output_tokens"] == 500
    assert first["stop_reason"] == "tool_use"
    assert first["retries"] == 0
    assert first["latency_ms"] > 0 and first["first_token_ms"] <= first["latency_ms"]
    assert first["cost_usd"] == pytest.approx((1000 * 1.0 + 500 * 2.0) / 1e6)
    assert set(first["parameters"]) >= {"max_output_tokens", "temperature", "tools"}
    assert "sk-test-log-0000" not in json.dumps(first)

    bash, write, read = records[2:5]
    assert bash["name"] == "bash" and bash["args"] == {"command": "echo hi; exit 3"}
    assert bash["exit_code"] == 3 and bash["ok"] is False and bash["duration_ms"] > 0
    assert write["name"] == "write" and write["ok"] is True
    assert write["args"]["content"] == "<500 chars>"  # a length, never the file's contents
    assert "SECRET-LOOKING" not in log.read_text()
    assert read["name"] == "read" and read["ok"] is False and read["error"]

    end = records[-1]
    assert end["status"] == "unverified" and end["turns"] == 2
    assert end["usage"]["input_tokens"] == 3000 and end["usage"]["output_tokens"] == 600
    assert end["cost_usd"] == pytest.approx(EXPECTED_COST)
    assert end["requests"] == 2 and end["tool_calls"] == 3 and end["tool_errors"] == 1

    # The log is not mistaken for a session: --continue still finds the session.
    fake_openai.enqueue(Reply("Still done.", usage=USAGE_2))
    again = lathe(
        "run",
        *PRICED_MODEL,
        "--base-url",
        fake_openai.base_url,
        "-C",
        str(workspace),
        "--continue",
        "and now?",
        cwd=workspace,
        env={"OPENAI_API_KEY": "sk-test-log-0000", "LATHE_HOME": str(home)},
    )
    assert again.returncode == 0, again.stderr
    assert [r["kind"] for r in _records(log)][-3:] == ["run_start", "model_request", "run_end"]


def test_cost_totals_in_the_status_line_and_the_json_stream(workspace, home, fake_openai):
    fake_openai.enqueue(*_script())
    text = lathe(
        "run",
        *PRICED_MODEL,
        "--base-url",
        fake_openai.base_url,
        "-C",
        str(workspace),
        "go",
        cwd=workspace,
        env={"OPENAI_API_KEY": "sk-test", "LATHE_HOME": str(home)},
    )
    assert text.returncode == 0, text.stderr
    assert "tokens 3,000 in, 600 out; cost $0.0042" in text.stderr

    fake_openai.enqueue(*_script())
    streamed = lathe(
        "run",
        "--json",
        *PRICED_MODEL,
        "--base-url",
        fake_openai.base_url,
        "-C",
        str(workspace),
        "go",
        cwd=workspace,
        env={"OPENAI_API_KEY": "sk-test", "LATHE_HOME": str(home)},
    )
    assert streamed.returncode == 0, streamed.stderr
    events = [json.loads(line) for line in streamed.stdout.splitlines()]
    requests = [e for e in events if e["type"] == "model_request"]
    assert [r["cost_usd"] for r in requests] == pytest.approx([0.002, 0.0022])
    assert events[-1]["type"] == "run_finished"
    assert events[-1]["cost_usd"] == pytest.approx(EXPECTED_COST)


def test_unpriced_model_has_no_cost(workspace, home, fake_openai):
    fake_openai.enqueue(Reply("Nothing to do."))
    result = lathe(
        "run",
        "--json",
        "--model",
        "fake-model",
        "--base-url",
        fake_openai.base_url,
        "-C",
        str(workspace),
        "go",
        cwd=workspace,
        env={"OPENAI_API_KEY": "sk-test", "LATHE_HOME": str(home)},
    )
    assert result.returncode == 0, result.stderr
    finished = json.loads(result.stdout.splitlines()[-1])
    assert finished["cost_usd"] is None  # unknown, not free
    [log] = _logs(home)
    assert _records(log)[-1]["cost_usd"] is None
