"""The run settings a session records (its `model_change` entry) hold no secret: they
go through the run's redactor as every other entry does.

Reproduced on main with the real CLI: `lathe run --verify "echo --key $OPENAI_API_KEY"`
wrote the key unmasked into the session's `model_change` entry, and `lathe sessions
export ID --format json` printed it; so did the value of a secret-looking variable
(MY_DB_PASSWORD). The .log records and the messages were masked already."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from tests.fakes.openai_server import Reply

KEY = "sk-test-SECRETKEY1234567890abcdef"
PASSWORD = "hunter2-horse-battery"


def _env(tmp_path: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("LATHE_", "OPENAI_"))}
    env.update({"OPENAI_API_KEY": KEY, "MY_DB_PASSWORD": PASSWORD,
                "LATHE_HOME": str(tmp_path / "home")})  # fmt: skip
    return env


def _lathe(tmp_path: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "lathe", *args], cwd=tmp_path, env=_env(tmp_path),
        capture_output=True, text=True, timeout=120, stdin=subprocess.DEVNULL,
    )  # fmt: skip


def _run(tmp_path: Path, server, *args: str) -> subprocess.CompletedProcess:
    ws = tmp_path / "ws"
    ws.mkdir(exist_ok=True)
    return _lathe(tmp_path, "run", "--json", "--model", "m", "--base-url", server.base_url,
                  "-C", str(ws), *args)  # fmt: skip


def test_a_secret_in_the_verify_command_is_not_written_to_the_session(tmp_path, fake_openai):
    fake_openai.enqueue(*(Reply("Done.") for _ in range(3)))
    check = f"echo --key {KEY} --password {PASSWORD} >/dev/null"

    result = _run(tmp_path, fake_openai, "--verify", check, "T")

    assert result.returncode == 0, result.stderr
    [session_file] = (tmp_path / "home" / "sessions").glob("*/*.jsonl")
    written = session_file.read_text()
    assert '"model_change"' in written and "echo --key sk-" in written  # masked, not dropped
    events = [json.loads(line) for line in result.stdout.splitlines()]
    session = next(e["session_id"] for e in events if e["type"] == "run_started")
    export = _lathe(tmp_path, "sessions", "export", session, "--format", "json")
    assert export.returncode == 0, export.stderr
    for text in (written, export.stdout):
        assert KEY not in text and PASSWORD not in text
