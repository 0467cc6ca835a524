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


def test_a_spent_quota_is_said_at_once_not_retried_as_a_rate_limit(tmp_path, fake_openai):
    # OpenAI's 429 insufficient_quota was retried five times (16 s) as "rate_limit": a
    # script retrying on rate limits looped on a billing problem.
    from tests.fakes.openai_server import ErrorReply

    fake_openai.enqueue(
        ErrorReply(429, "You exceeded your current quota, please check your plan and billing "
                   "details.", "insufficient_quota", "insufficient_quota")
    )  # fmt: skip
    result, _ = run_at(fake_openai.base_url, tmp_path)
    assert result.returncode == 3
    assert len(fake_openai.chat_bodies()) == 1
    assert not retry_lines(result.stderr)
    last = result.stderr.strip().splitlines()[-1]
    assert last.startswith("lathe: ") and "quota" in last


def test_a_completion_of_a_shape_lathe_cannot_read_is_a_provider_error(tmp_path, fake_openai):
    # `{"choices": 5}` ended the run with a TypeError traceback and exit 1.
    from tests.fakes.openai_server import ErrorReply

    fake_openai.enqueue(*[ErrorReply(200, raw_body='{"choices": 5}')] * 2)
    result, _ = run_at(fake_openai.base_url, tmp_path, "-c", "retry.max_attempts=2",
                       "-c", "retry.base_delay_s=0")  # fmt: skip
    assert result.returncode == 3, result.stderr
    assert "Traceback" not in result.stderr
    assert result.stderr.strip().splitlines()[-1].startswith("lathe: ")


def test_a_certificate_lathe_cannot_verify_is_said_at_once_not_retried(tmp_path):
    # CERTIFICATE_VERIFY_FAILED was retried five times (15 s) as a passing transport fault.
    import http.server
    import shutil
    import ssl
    import subprocess
    import threading

    import pytest

    if shutil.which("openssl") is None:
        pytest.skip("needs openssl to make a certificate")
    key, cert = tmp_path / "key.pem", tmp_path / "cert.pem"
    subprocess.run(
        ["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1",
         "-subj", "/CN=127.0.0.1", "-keyout", str(key), "-out", str(cert)],
        check=True, capture_output=True,
    )  # fmt: skip
    server = http.server.HTTPServer(("127.0.0.1", 0), http.server.BaseHTTPRequestHandler)
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(cert, key)
    server.socket = context.wrap_socket(server.socket, server_side=True)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        result, _ = run_at(f"https://127.0.0.1:{server.server_address[1]}/v1", tmp_path)
    finally:
        server.shutdown()
    assert result.returncode == 3
    assert not retry_lines(result.stderr)
    last = result.stderr.strip().splitlines()[-1]
    assert last.startswith("lathe: ") and "certificate" in last
