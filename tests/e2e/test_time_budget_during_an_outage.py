"""`lathe run --timeout` reached while the model's endpoint was failing: the run's end
carries the provider's last error, and a run the model never answered at all ends
`provider_error` (exit 3), so `lathe batch --retry-errors` runs it again. It had ended
`out_of_budget` with `error: null` (exit 1, "task not achieved"), the outage hidden and
the task counted as measured and unsolved."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
from tests.e2e.test_not_a_model_reply import _finished
from tests.fakes.openai_server import Call, Hang, Reply, server_error

TIMEOUT = "3s"


def _lathe(tmp_path: Path, server, *args: str) -> subprocess.CompletedProcess:
    ws = tmp_path / "ws"
    ws.mkdir(exist_ok=True)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("LATHE_", "OPENAI_"))}
    env.update(OPENAI_API_KEY="sk-test", LATHE_HOME=str(tmp_path / "home"))
    return subprocess.run(
        [sys.executable, "-m", "lathe", "run", "--model", "m", "--base-url", server.base_url,
         "-C", str(ws), "--timeout", TIMEOUT, *args, "say hi"],
        cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120,
        stdin=subprocess.DEVNULL,
    )  # fmt: skip


@pytest.mark.waits
def test_a_run_the_failing_model_never_answered_ends_with_its_error(tmp_path, fake_openai):
    fake_openai.responder = lambda body: server_error(503, retry_after="100")

    started = time.monotonic()
    result = _lathe(tmp_path, fake_openai, "--json")

    assert time.monotonic() - started < 30
    assert result.returncode == 3, result.stderr
    finished = _finished(result)
    assert finished["status"] == "provider_error"
    assert finished["reason"].startswith("the time budget (3s) was reached"), finished["reason"]
    error = finished["error"]
    assert error["kind"] == "overloaded" and error["status"] == 503, error
    assert "The server had an error (503)" in error["message"]


@pytest.mark.waits
def test_a_run_the_silent_model_never_answered_ends_provider_error(tmp_path, fake_openai):
    fake_openai.responder = lambda body: Hang(100)

    started = time.monotonic()
    result = _lathe(tmp_path, fake_openai, "--json")

    assert time.monotonic() - started < 30
    assert result.returncode == 3, result.stderr
    finished = _finished(result)
    assert finished["status"] == "provider_error"
    error = finished["error"]
    assert error["kind"] == "transport", error
    assert "no reply from the model" in error["message"], error["message"]


@pytest.mark.waits
def test_the_headless_face_says_the_outage_in_one_line(tmp_path, fake_openai):
    fake_openai.responder = lambda body: server_error(503, retry_after="100")

    result = _lathe(tmp_path, fake_openai)

    assert result.returncode == 3, result.stderr
    last = result.stderr.strip().splitlines()[-1]
    assert last.startswith("lathe: the time budget (3s) was reached"), last
    assert "(HTTP 503)" in last, last


@pytest.mark.waits
def test_a_run_cut_while_a_later_request_failed_keeps_that_error(tmp_path, fake_openai):
    fake_openai.enqueue(Reply(calls=[Call("ls", {})]))
    fake_openai.responder = lambda body: server_error(503, retry_after="100")

    result = _lathe(tmp_path, fake_openai, "--json")

    # The model had answered: a budget ended a run that measured something.
    assert result.returncode == 1, result.stderr
    finished = _finished(result)
    assert finished["status"] == "out_of_budget"
    assert finished["error"]["kind"] == "overloaded", finished["error"]


@pytest.mark.waits
def test_a_run_cut_while_the_model_was_answering_is_out_of_budget_alone(tmp_path, fake_openai):
    fake_openai.enqueue(Reply("Thinking about it. " * 4, stall_after=4, stall_s=100))

    result = _lathe(tmp_path, fake_openai, "--json")

    assert result.returncode == 1, result.stderr
    finished = _finished(result)
    assert finished["status"] == "out_of_budget"
    assert finished["error"] is None
