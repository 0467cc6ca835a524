"""`lathe run` against a model server that hangs, and against a port nobody listens on:
the run ends with exit 3, soon, and its last words name the URL and what to change.

`--model m --base-url URL` resolves to the `openai` provider entry (resolve.py, rule 3),
so `providers.openai.*` are the keys that apply."""

from __future__ import annotations

import re
import socket
import time
from pathlib import Path

from tests.e2e.test_calculator import lathe
from tests.fakes.openai_server import Hang


def run_at(base_url: str, tmp_path: Path, *args: str):
    """`lathe run` with a test key and a private home; returns (result, seconds taken)."""
    started = time.monotonic()
    result = lathe(
        "run", "--model", "m", "--base-url", base_url, "-C", str(tmp_path), *args, "say hi",
        cwd=tmp_path,
        env_extra={"OPENAI_API_KEY": "sk-test", "LATHE_HOME": str(tmp_path / "home")},
    )  # fmt: skip
    return result, time.monotonic() - started


def retry_lines(stderr: str) -> list[str]:
    return [line for line in stderr.splitlines() if re.match(r"\s*retry \d+/\d+ in ", line)]


def test_a_server_that_never_answers_ends_the_run_at_the_idle_limit(tmp_path, fake_openai):
    fake_openai.responder = lambda request: Hang(300)

    result, took = run_at(
        fake_openai.base_url, tmp_path,
        "-c", "providers.openai.idle_timeout_s=1", "-c", "retry.max_attempts=2",
    )  # fmt: skip

    assert result.returncode == 3, result.stderr
    said = f"no data from {fake_openai.base_url} for 1 s (providers.openai.idle_timeout_s)"
    assert said in result.stderr
    assert "gave up after 2 attempts" in result.stderr
    assert len(retry_lines(result.stderr)) == 1
    assert len(fake_openai.chat_bodies()) == 2
    assert took < 60  # the 600 s total (and 300 s hang) are nowhere near reached


def test_a_closed_loopback_port_ends_the_run_after_a_short_retry(tmp_path):
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        url = f"http://127.0.0.1:{sock.getsockname()[1]}/v1"

    result, took = run_at(url, tmp_path)

    assert result.returncode == 3, result.stderr
    assert f"nothing is listening at {url}: start the server or fix --base-url" in result.stderr
    assert "gave up after 2 attempts" in result.stderr
    assert [line.split(":")[0].strip() for line in retry_lines(result.stderr)] == [
        "retry 1/2 in 1.0s"
    ]
    assert took < 10  # about 1 s of waiting, against ~16 s of backoff before
