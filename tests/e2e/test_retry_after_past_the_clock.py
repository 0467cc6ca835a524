"""`lathe run` told to come back after a wait past what the clock can name (a
Retry-After of 1e20 s): it gives up at once, as for any wait too long to make, with one
line saying so. The date of that wait overflowed `time.localtime` and the run died with
a traceback, no `run_finished` written."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from tests.fakes import anthropic_server as claude
from tests.fakes.openai_server import rate_limited, server_error

FAR = "99999999999999999999"


def _lathe(tmp_path: Path, base_url: str, *args: str) -> subprocess.CompletedProcess:
    ws = tmp_path / "ws"
    ws.mkdir(exist_ok=True)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("LATHE_", "OPENAI_"))}
    env.update(OPENAI_API_KEY="sk-test", ANTHROPIC_API_KEY="sk-ant-test")
    env.update(LATHE_HOME=str(tmp_path / "home"), TZ="UTC")
    return subprocess.run(
        [sys.executable, "-m", "lathe", "run", "--json", "--base-url", base_url,
         "-C", str(ws), *args, "say hi"],
        cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120,
        stdin=subprocess.DEVNULL,
    )  # fmt: skip


def _assert_given_up_in_one_line(result: subprocess.CompletedProcess, kind: str) -> None:
    assert "Traceback" not in result.stderr, result.stderr
    assert result.returncode == 3, result.stderr
    events = [json.loads(line) for line in result.stdout.splitlines()]
    [finished] = [e for e in events if e["type"] == "run_finished"]
    assert finished["status"] == "provider_error"
    assert finished["error"]["kind"] == kind
    message = finished["error"]["message"]
    assert "more than the 120s lathe waits" in message, message
    assert "\n" not in message


@pytest.mark.parametrize(
    ("item", "kind"),
    [
        (rate_limited(retry_after=FAR), "rate_limit"),
        (rate_limited(retry_after="1e20"), "rate_limit"),
        (server_error(503, retry_after=FAR), "overloaded"),
        (rate_limited(retry_after=None, **{"retry-after-ms": "1e20"}), "rate_limit"),
    ],
    ids=["seconds", "exponent", "503", "milliseconds"],
)
def test_a_wait_past_the_clock_is_given_up_in_one_line(tmp_path, fake_openai, item, kind):
    fake_openai.enqueue(item)

    result = _lathe(tmp_path, fake_openai.base_url, "--model", "m")

    _assert_given_up_in_one_line(result, kind)
    assert len(fake_openai.chat_bodies()) == 1


def test_a_wait_past_the_clock_from_anthropic_is_given_up_in_one_line(tmp_path, fake_anthropic):
    fake_anthropic.enqueue(claude.rate_limited(retry_after="1e20"))

    result = _lathe(
        tmp_path, fake_anthropic.base_url, "--model", "m", "-c", "models.m.provider=anthropic"
    )

    _assert_given_up_in_one_line(result, "rate_limit")
    assert len(fake_anthropic.message_bodies()) == 1
