"""Budgets beyond turns, through the real `lathe run` against the fake server: a token, cost
or time budget ends the run `out_of_budget` (exit 1) with a reason naming the budget and
the figure, leaves a session that `--continue` with a larger budget finishes, and a cost
budget on a model without prices is refused before anything runs."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
from tests.fakes.openai_server import Call, Reply

TASK = "Set value to 2 in app.py"
ORIGINAL = "value = 1\nprint(value)\n"
VERIFY = "grep -q 'value = 2' app.py"
# Every scripted reply reports this usage: 1,200 tokens, and $0.20 at the prices below.
USAGE = {"prompt_tokens": 1000, "completion_tokens": 200, "total_tokens": 1200}
PRICED = [
    "-c", "models.m.provider=openai",
    "-c", "models.m.input_price=100",  # $ per million: 1,000 in = $0.10
    "-c", "models.m.output_price=500",  # 200 out = $0.10
]  # fmt: skip


def _env(tmp_path: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("LATHE_", "OPENAI_"))}
    env.update({"OPENAI_API_KEY": "sk-test", "LATHE_HOME": str(tmp_path / "home")})
    return env


def lathe_run(server, ws: Path, tmp_path: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "lathe", "run", "--model", "m", "--base-url", server.base_url,
         "-C", str(ws), *args],
        cwd=tmp_path, env=_env(tmp_path), capture_output=True, text=True, timeout=120,
        stdin=subprocess.DEVNULL,
    )  # fmt: skip


def _workspace(tmp_path: Path) -> Path:
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "app.py").write_text(ORIGINAL)
    return ws


def _events(result: subprocess.CompletedProcess) -> list[dict]:
    return [json.loads(line) for line in result.stdout.splitlines()]


def _session_messages(tmp_path: Path) -> list[dict]:
    files = sorted((tmp_path / "home" / "sessions").glob("*/*.jsonl"))
    assert len(files) == 1, files
    entries = [json.loads(line) for line in files[0].read_text().splitlines()]
    return [e["message"] for e in entries if e.get("type") == "message"]


def _pids(marker: str) -> list[str]:
    found = subprocess.run(["pgrep", "-f", marker], capture_output=True, text=True)
    return found.stdout.split()


def looking_around() -> list[Reply]:
    """Three replies that read and change nothing (different calls: no stall)."""
    return [
        Reply(calls=[Call("read", {"path": "app.py"})], usage=USAGE),
        Reply(calls=[Call("grep", {"pattern": "value"})], usage=USAGE),
        Reply(calls=[Call("ls", {})], usage=USAGE),
    ]


def fixing() -> list[Reply]:
    edit = {"path": "app.py", "old_string": "value = 1", "new_string": "value = 2"}
    return [Reply(calls=[Call("edit", edit)], usage=USAGE), Reply("value is 2.", usage=USAGE)]


def test_the_token_budget_ends_the_run_out_of_budget(tmp_path, fake_openai):
    ws = _workspace(tmp_path)
    fake_openai.enqueue(*looking_around(), *fixing())

    result = lathe_run(fake_openai, ws, tmp_path, "--json", "--max-tokens", "3000", TASK)

    assert result.returncode == 1, result.stderr
    finished = _events(result)[-1]
    assert finished["type"] == "run_finished"
    assert finished["status"] == "out_of_budget"
    assert finished["reason"] == "the token budget (3,000) was reached: 3,600 tokens used"
    assert finished["turns"] == 3
    # The third reply's call still ran: the budget stops the next request, and leaves
    # no call without its result.
    assert len(fake_openai.chat_bodies()) == 3
    roles = [m["role"] for m in _session_messages(tmp_path)]
    assert roles == ["user", "assistant", "tool", "assistant", "tool", "assistant", "tool"]


def test_the_cost_budget_stops_the_run_and_continue_with_a_larger_one_finishes(
    tmp_path, fake_openai
):
    ws = _workspace(tmp_path)
    fake_openai.enqueue(*looking_around(), *fixing())

    first = lathe_run(
        fake_openai, ws, tmp_path, *PRICED, "--verify", VERIFY, "--max-cost", "0.5", TASK
    )

    assert first.returncode == 1, first.stderr
    assert "status: out_of_budget after 3 turns" in first.stderr
    assert "reason: the cost budget ($0.50) was reached: $0.60 spent" in first.stderr
    assert "lathe run --continue" in first.stderr  # how to go on
    assert (ws / "app.py").read_text() == ORIGINAL
    assert len(fake_openai.chat_bodies()) == 3

    second = lathe_run(
        fake_openai, ws, tmp_path, *PRICED, "--verify", VERIFY, "--continue", "--max-cost", "2"
    )

    assert second.returncode == 0, second.stderr
    assert "status: verified" in second.stderr
    assert (ws / "app.py").read_text() == "value = 2\nprint(value)\n"
    resumed = fake_openai.chat_bodies()[3]["messages"]
    assert TASK in resumed[1]["content"]
    assert len([m for m in resumed if m["role"] == "tool"]) == 3  # the first run's calls


def test_a_cost_budget_on_a_model_without_prices_is_refused_before_anything_runs(
    tmp_path, fake_openai
):
    ws = _workspace(tmp_path)

    result = lathe_run(fake_openai, ws, tmp_path, "--max-cost", "1", TASK)

    assert result.returncode == 2
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith("lathe: ")
    assert "no prices" in lines[0] and "m" in lines[0]
    assert "input_price" in lines[0] and "--max-tokens" in lines[0]
    assert fake_openai.chat_bodies() == []
    assert not list((tmp_path / "home").glob("sessions/*/*.jsonl"))


def test_bad_budget_values_are_one_line_errors_naming_the_option(tmp_path, fake_openai):
    ws = _workspace(tmp_path)
    duration = "expected a duration like 90s, 10m or 1h30m, or plain seconds"
    cases = {
        ("--timeout", "10x"): f"--timeout: {duration}, got '10x'",
        ("--timeout", "0s"): f"--timeout: {duration}, got '0s'",
        ("--max-tokens", "lots"): "--max-tokens: expected a number of tokens such as 50000 or 50k",
        ("--max-cost", "-1"): "--max-cost: expected US dollars such as 0.50 or 2, got '-1'",
        ("-c", "agent.timeout=soon"): f"-c agent.timeout: {duration}, got 'soon'",
    }
    for args, expected in cases.items():
        result = lathe_run(fake_openai, ws, tmp_path, *args, TASK)

        assert result.returncode == 2, (args, result.stderr)
        lines = result.stderr.strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith("lathe: "), (args, result.stderr)
        assert expected in lines[0], (args, result.stderr)
    assert fake_openai.chat_bodies() == []


@pytest.mark.waits
def test_the_time_budget_cuts_a_reply_still_streaming(tmp_path, fake_openai):
    ws = _workspace(tmp_path)
    fake_openai.enqueue(
        Reply("Let me think about where value is set. " * 4, stall_after=4, stall_s=120)
    )

    started = time.monotonic()
    result = lathe_run(fake_openai, ws, tmp_path, "--json", "--timeout", "5s", TASK)

    assert time.monotonic() - started < 60
    assert result.returncode == 1, result.stderr
    events = _events(result)
    assert any(e["type"] == "text_delta" for e in events)  # the reply had begun
    finished = events[-1]
    assert finished["status"] == "out_of_budget"
    assert finished["reason"].startswith("the time budget (5s) was reached: ")
    # Nothing of the cut reply enters the conversation.
    assert [m["role"] for m in _session_messages(tmp_path)] == ["user"]

    fake_openai.enqueue(Reply("value is set on line 1."))
    resumed = lathe_run(fake_openai, ws, tmp_path, "--continue", "--timeout", "5m")

    assert resumed.returncode == 0, resumed.stderr
    assert [m["role"] for m in fake_openai.chat_bodies()[1]["messages"]] == ["system", "user"]


@pytest.mark.waits
def test_the_time_budget_stops_a_running_command_and_answers_its_call(tmp_path, fake_openai):
    ws = _workspace(tmp_path)
    marker = f"lathe-budget-test-{os.getpid()}"
    fake_openai.enqueue(Reply(calls=[Call("bash", {"command": f"sleep 100 # {marker}"})]))

    started = time.monotonic()
    result = lathe_run(fake_openai, ws, tmp_path, "--json", "--timeout", "5s", TASK)

    assert time.monotonic() - started < 60
    assert result.returncode == 1, result.stderr
    finished = _events(result)[-1]
    assert finished["status"] == "out_of_budget"
    assert finished["reason"].startswith("the time budget (5s) was reached: ")
    [cut] = [e for e in _events(result) if e["type"] == "tool_finished"]
    assert cut["duration_ms"] >= 1000  # how long it ran before the cut (it said 0.0)
    assert not _pids(marker), "the command outlived the run"
    messages = _session_messages(tmp_path)
    assert [m["role"] for m in messages] == ["user", "assistant", "tool"]
    assert messages[2]["is_error"] and "time budget" in messages[2]["content"]

    fake_openai.enqueue(Reply("It was cut short; value is 1."))
    resumed = lathe_run(fake_openai, ws, tmp_path, "--continue")

    assert resumed.returncode == 0, resumed.stderr
    sent = fake_openai.chat_bodies()[1]["messages"]
    tool = [m for m in sent if m["role"] == "tool"]
    assert len(tool) == 1 and "time budget" in tool[0]["content"]


def test_an_attempt_that_ran_out_of_budget_is_not_started_over(tmp_path, fake_openai):
    ws = _workspace(tmp_path)
    fake_openai.enqueue(*looking_around())

    result = lathe_run(
        fake_openai, ws, tmp_path, "--json", "--verify", VERIFY, "--attempts", "3",
        "--max-tokens", "3000", TASK,
    )  # fmt: skip

    assert result.returncode == 1, result.stderr
    events = _events(result)
    assert not [e for e in events if e["type"] == "attempt_started"]
    assert events[-1]["status"] == "out_of_budget"
    assert len(fake_openai.chat_bodies()) == 3


def test_the_budget_counts_every_attempt_of_the_run(tmp_path, fake_openai):
    ws = _workspace(tmp_path)
    fake_openai.enqueue(*looking_around())

    result = lathe_run(
        fake_openai, ws, tmp_path, "--json", "--verify", VERIFY, "--attempts", "5",
        "--max-turns", "1", "--max-tokens", "2000", TASK,
    )  # fmt: skip

    # Attempt 1 spends 1,200 tokens and runs out of turns; attempt 2 brings the run to
    # 2,400; a third would start over the budget.
    assert result.returncode == 1, result.stderr
    events = _events(result)
    assert len([e for e in events if e["type"] == "attempt_started"]) == 1
    assert len(fake_openai.chat_bodies()) == 2
    notices = [e["message"] for e in events if e["type"] == "notice"]
    assert any(
        "no further attempt" in n and "the token budget (2,000) was reached: 2,400" in n
        for n in notices
    ), notices
    ends = [e["status"] for e in events if e["type"] == "run_finished"]
    assert ends == ["max_turns", "max_turns"]


@pytest.mark.waits
def test_the_time_budget_cuts_the_check_before_the_first_turn_too(tmp_path, fake_openai):
    ws = _workspace(tmp_path)

    result = lathe_run(
        fake_openai, ws, tmp_path, "--json", "--verify", "sleep 100", "--timeout", "3s", TASK
    )

    assert result.returncode == 1, result.stderr
    finished = _events(result)[-1]
    assert finished["status"] == "out_of_budget"
    assert finished["turns"] == 0
    assert fake_openai.chat_bodies() == []
    assert [m["content"] for m in _session_messages(tmp_path)] == [TASK]  # kept to continue


def test_subagents_share_the_runs_cost_budget_instead_of_each_getting_all_of_it(
    tmp_path, fake_openai
):
    # Each child got the whole --max-cost: a $0.50 run spent $2.00.
    import threading

    asked = {"parent": 0}
    lock = threading.Lock()

    def respond(body):
        text = next(m for m in body["messages"] if m["role"] == "user")["content"]
        if "SUBTASK" in text:  # a child: it keeps looking, $0.20 a reply
            return Reply(calls=[Call("read", {"path": "app.py"})], usage=USAGE)
        with lock:
            asked["parent"] += 1
            first = asked["parent"] == 1
        if first:
            return Reply(
                calls=[Call("task", {"description": f"look {n}", "agent": "explore",
                                     "prompt": f"SUBTASK{n}: look around"}) for n in range(3)],
                usage=USAGE,
            )  # fmt: skip
        return Reply("Done.", usage=USAGE)

    fake_openai.responder = respond
    ws = _workspace(tmp_path)
    done = lathe_run(fake_openai, ws, tmp_path, *PRICED, "--approval", "full", "--json",
                     "--max-cost", "0.5", TASK)  # fmt: skip
    assert done.returncode == 1, done.stderr
    finished = _events(done)[-1]
    assert finished["status"] == "out_of_budget"
    # Under $0.50 when each request was let go, plus at most one reply in flight for each
    # of the three children running at once; never a whole budget for each.
    assert finished["cost_usd"] < 0.5 + 3 * 0.2, finished
    assert len(fake_openai.chat_bodies()) <= 6


@pytest.mark.parametrize("case", ["never", "small"])
def test_a_reply_whose_usage_never_arrives_still_counts_against_the_budget(
    tmp_path, fake_openai, case
):
    # A server that sends no usage (or a reply cut after its first call, `--profile
    # small`, before the usage chunk) counted as 0 tokens: --max-tokens never tripped.
    import itertools

    turn = itertools.count(1)
    when = "never" if case == "never" else "requested"

    def respond(body):
        n = next(turn)  # a new command each turn: never the same call again
        calls = [Call("bash", {"command": f"echo {n}"}), Call("bash", {"command": f"echo {n}b"})]
        return Reply(calls=calls, usage=USAGE, usage_when=when)

    fake_openai.responder = respond
    extra = ("--profile", "small") if case == "small" else ()
    ws = _workspace(tmp_path)
    done = lathe_run(fake_openai, ws, tmp_path, "--approval", "full", "--json", "--max-tokens",
                     "5000", "--max-turns", "10", *extra, TASK)  # fmt: skip
    finished = _events(done)[-1]
    assert finished["status"] == "out_of_budget", finished
    assert finished["usage"]["input_tokens"] > 0
    assert len(fake_openai.chat_bodies()) < 10
