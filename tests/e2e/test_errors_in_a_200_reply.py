"""`lathe run` against a server that answers 200 and reports the error in the body (as
OpenRouter-style proxies do: an SSE `error` event, or one JSON error object): the
error's code, type or status is read as the HTTP status it stands for. Every such error
had been "overloaded" and retried five times (~14 s), a rejected key and a spent quota
included, and a plain JSON body was said to be "mid-stream"."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from tests.e2e.test_run_edges import lathe_run
from tests.fakes.openai_server import Call, ErrorReply, Reply


def _run(server, tmp_path: Path) -> subprocess.CompletedProcess:
    ws = tmp_path / "ws"
    ws.mkdir(exist_ok=True)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("LATHE_", "OPENAI_"))}
    env.update({"OPENAI_API_KEY": "sk-test", "LATHE_HOME": str(tmp_path / "home")})
    argv = [sys.executable, "-m", "lathe", "run", "--json", "--model", "m", "--base-url",
            server.base_url, "-C", str(ws), "-c", "retry.max_attempts=2",
            "-c", "retry.base_delay_s=0", "say hi"]  # fmt: skip
    return subprocess.run(
        argv, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120,
        stdin=subprocess.DEVNULL,
    )  # fmt: skip


def _error(result: subprocess.CompletedProcess) -> dict:
    events = [json.loads(line) for line in result.stdout.splitlines()]
    [finished] = [e for e in events if e["type"] == "run_finished"]
    return finished["error"]


def _streamed(error: dict) -> Reply:
    return Reply("", error_after=0, error=error)


def _whole(error: dict) -> ErrorReply:
    return ErrorReply(200, raw_body=json.dumps({"error": error}))


BAD_KEY = {"message": "Incorrect API key provided", "code": 401, "type": "invalid_request_error"}
QUOTA = {"message": "quota gone", "code": "insufficient_quota", "type": "insufficient_quota"}
PAYMENT = {"message": "Insufficient credits", "code": 402}
NO_MODEL = {"message": "The model `m` does not exist", "code": "model_not_found"}
SLOW_DOWN = {"message": "Too many requests", "code": 429}
BROKE = {"message": "upstream failed", "code": 502}
UNKNOWN = {"message": "something went wrong"}


@pytest.mark.parametrize(
    ("item", "kind", "attempts", "words"),
    [
        (_streamed(BAD_KEY), "auth", 1, "the API key was rejected"),
        (_whole(BAD_KEY), "auth", 1, "the API key was rejected"),
        (_streamed(QUOTA), "bad_request", 1, "quota is used up"),
        (_whole(QUOTA), "bad_request", 1, "quota is used up"),
        (_streamed(PAYMENT), "bad_request", 1, "quota is used up"),
        (_streamed(NO_MODEL), "bad_request", 1, "found no model 'm'"),
        (_streamed(SLOW_DOWN), "rate_limit", 2, "rate limited"),
        (_streamed(BROKE), "overloaded", 2, "upstream failed"),
        (_streamed(UNKNOWN), "overloaded", 2, "reported an error mid-stream"),
        (_whole(UNKNOWN), "overloaded", 2, "reported an error in its reply"),
    ],
)
def test_an_error_in_a_200_reply_is_mapped_as_its_code_says(
    tmp_path, fake_openai, item, kind, attempts, words
):
    fake_openai.enqueue(item, item)

    result = _run(fake_openai, tmp_path)

    assert result.returncode == 3, result.stderr
    error = _error(result)
    assert error["kind"] == kind
    assert error["status"] is None  # the server answered 200
    assert len(fake_openai.chat_bodies()) == attempts
    assert words in error["message"], error["message"]
    if isinstance(item, ErrorReply):  # one JSON document: nothing was streamed
        assert "mid-stream" not in error["message"]


# The code says the prompt is past the window; the words say it as no pattern knows.
TOO_LONG = {"message": "Input exceeds the model's limit.", "code": "context_length_exceeded",
            "type": "invalid_request_error"}  # fmt: skip


@pytest.mark.parametrize(
    "refusal",
    [
        _streamed(TOO_LONG),
        _whole(TOO_LONG),
        ErrorReply(400, raw_body=json.dumps({"error": TOO_LONG})),
    ],
    ids=["streamed", "whole", "http-400"],
)
def test_a_too_long_code_in_other_words_is_compacted_and_the_run_goes_on(
    tmp_path, fake_openai, refusal
):
    # It had been a plain bad request: the run ended where compacting would have fit.
    ws = tmp_path / "ws"
    ws.mkdir()
    for n in range(4):
        (ws / f"log{n}.txt").write_text(f"entry {n} " * 2_000)
    fake_openai.enqueue(
        *(Reply(calls=[Call("read", {"path": f"log{n}.txt"})]) for n in range(4)),
        refusal,
        Reply("Goal: read the logs. Progress: all four read."),  # the compaction summary
        Reply("All four logs read."),
    )

    done = lathe_run(fake_openai, ws, tmp_path, "--approval", "full", "Read the logs")

    assert done.returncode == 0, done.stdout + done.stderr
    assert "All four logs read." in done.stdout
    bodies = fake_openai.chat_bodies()
    assert len(bodies) == 7
    assert len(bodies[-1]["messages"]) < len(bodies[4]["messages"])  # compacted, then sent
