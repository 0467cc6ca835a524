"""What `lathe run --json` tells a program, read from the real CLI's stdout: the session
of the run, why a run that the provider failed ended (an auth failure told apart from
retries that ran out), and what each tool returned, capped and masked."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import uuid
from pathlib import Path

import pytest
from tests.fakes.openai_server import Call, ErrorReply, Reply, rate_limited, server_error

from lathe.config.secrets import mask_secret

TASK = "Look at the workspace"


def _run(server, tmp_path: Path, *args: str, key: str = "sk-test") -> subprocess.CompletedProcess:
    ws = tmp_path / "ws"
    ws.mkdir(exist_ok=True)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("LATHE_", "OPENAI_"))}
    env.update({"OPENAI_API_KEY": key, "LATHE_HOME": str(tmp_path / "home")})
    argv = [sys.executable, "-m", "lathe", "run", "--json", "--model", "m", "--base-url",
            server.base_url, "-C", str(ws), *args, TASK]  # fmt: skip
    return subprocess.run(
        argv, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120,
        stdin=subprocess.DEVNULL,
    )  # fmt: skip


def _events(result: subprocess.CompletedProcess, kind: str) -> list[dict]:
    events = [json.loads(line) for line in result.stdout.splitlines()]
    return [e for e in events if e["type"] == kind]


def test_run_started_names_the_session_the_run_is_recorded_in(tmp_path, fake_openai):
    fake_openai.enqueue(Reply("Nothing to do."))

    result = _run(fake_openai, tmp_path)

    assert result.returncode == 0, result.stderr
    [session_file] = (tmp_path / "home" / "sessions").glob("*/*.jsonl")
    [started] = _events(result, "run_started")
    assert started["session_id"] == session_file.stem.rpartition("_")[2]
    [finished] = _events(result, "run_finished")
    assert finished["error"] is None


REQUEST_ID = {"x-request-id": "req_0123456789"}


@pytest.mark.parametrize(
    ("script", "expected"),
    [
        pytest.param(
            [ErrorReply(401, "Incorrect API key provided.", headers=REQUEST_ID)],
            {"kind": "auth", "status": 401, "request_id": "req_0123456789", "retries": 0},
            id="auth",
        ),
        pytest.param(
            [rate_limited(retry_after="0", **REQUEST_ID)] * 3,
            {"kind": "rate_limit", "status": 429, "request_id": "req_0123456789", "retries": 2},
            id="rate-limit-retries-ran-out",
        ),
        pytest.param(
            [server_error(500, retry_after="0")] * 3,
            {"kind": "overloaded", "status": 500, "request_id": None, "retries": 2},
            id="server-errors-retries-ran-out",
        ),
    ],
)
def test_run_finished_says_what_the_provider_failed_with(tmp_path, fake_openai, script, expected):
    fake_openai.enqueue(*script)

    result = _run(fake_openai, tmp_path, "-c", "retry.max_attempts=3")

    assert result.returncode == 3, result.stderr
    [finished] = _events(result, "run_finished")
    assert finished["status"] == "provider_error"
    error = finished["error"]
    assert {k: error[k] for k in expected} == expected
    assert error["message"] == finished["reason"]
    assert f"HTTP {expected['status']}" in error["message"]
    assert fake_openai.remaining == 0  # every scripted failure was met


def test_tool_finished_carries_what_the_model_saw_capped(tmp_path, fake_openai):
    fake_openai.enqueue(
        Reply(
            calls=[
                Call("bash", {"command": "echo short"}, id="short"),
                Call("bash", {"command": "seq 1 5000"}, id="long"),
            ]
        ),
        Reply("Seen."),
    )

    result = _run(fake_openai, tmp_path, "--approval", "full")

    assert result.returncode == 0, result.stderr
    outputs = {e["call_id"]: e["output"] for e in _events(result, "tool_finished")}
    seen = {
        m["tool_call_id"]: m["content"]
        for m in fake_openai.chat_bodies()[1]["messages"]
        if m["role"] == "tool"
    }
    assert outputs["short"] == seen["short"]
    assert "short" in outputs["short"]

    long_seen, long_shown = seen["long"], outputs["long"]
    assert "4999\n5000" in long_seen and len(long_seen) > 4_000  # the model got all of it
    assert len(long_shown) <= 4_000
    head, marker, tail = long_shown.partition("\n[... ")
    assert marker, long_shown
    assert long_seen.startswith(head) and long_seen.endswith(tail.partition(" ...]\n")[2])
    assert "characters left out" in tail
    assert "4999\n5000" in tail  # the end of the output, where failures show, is kept


def test_a_secret_in_a_tool_output_is_masked_in_the_json_line(tmp_path, fake_openai):
    key = f"sk-json-{uuid.uuid4().hex}"
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "leaked.txt").write_text(f"token: {key}\n")
    fake_openai.enqueue(
        Reply(calls=[Call("bash", {"command": "cat leaked.txt"})]),
        Reply(calls=[Call("read", {"path": "leaked.txt"})]),
        Reply("Read it."),
    )

    result = _run(fake_openai, tmp_path, "--approval", "full", key=key)

    assert result.returncode == 0, result.stderr
    assert key not in result.stdout and key not in result.stderr
    outputs = [e["output"] for e in _events(result, "tool_finished")]
    assert len(outputs) == 2
    assert all(f"token: {mask_secret(key)}" in output for output in outputs), outputs


def test_a_secret_at_the_cut_of_the_verify_output_tail_is_not_shown_in_part(
    tmp_path, fake_openai
):
    # output_tail was cut at 2,000 characters, then masked as whole values: the last 23
    # characters of a key that straddled the cut were printed.
    key = f"sk-proj-{uuid.uuid4().hex}"
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "config.env").write_text(f"OPENAI_API_KEY={key}\n")
    fake_openai.enqueue(Reply("Done."))
    check = "cat config.env; python3 -c \"print('Y' * 1975)\"; false"
    result = _run(fake_openai, tmp_path, "--max-turns", "1", "--verify", check, key=key)
    tail = _events(result, "verify_finished")[0]["output_tail"]
    assert tail.startswith("Y")  # from the first whole line
    assert key[-12:] not in result.stdout


def test_each_event_is_one_line_for_any_reader_even_with_unicode_line_separators(
    tmp_path, fake_openai
):
    # JSON leaves U+2028, U+2029 and U+0085 raw in strings; a reader that splits on every
    # line break Python knows (`splitlines`, httpx's `iter_lines`) got half an event.
    fake_openai.enqueue(Reply("line one\u2028line two\u2029three\x85four"))
    result = _run(fake_openai, tmp_path)
    assert result.returncode == 0, result.stderr
    events = [json.loads(line) for line in result.stdout.splitlines()]
    [reply] = [e for e in events if e["type"] == "assistant_reply"]
    assert reply["message"]["text"] == "line one\u2028line two\u2029three\x85four"


def test_json_lines_are_utf8_whatever_the_locale(tmp_path, fake_openai):
    # Under an ASCII locale the first "é" in an event ended the run with a traceback.
    ws = tmp_path / "ws"
    ws.mkdir()
    fake_openai.enqueue(Reply("Café crème."))
    env = {k: v for k, v in os.environ.items() if not k.startswith(("LATHE_", "OPENAI_"))}
    env.update(OPENAI_API_KEY="sk-test", LATHE_HOME=str(tmp_path / "home"),
               PYTHONIOENCODING="ascii")  # fmt: skip
    result = subprocess.run(
        [sys.executable, "-m", "lathe", "run", "--json", "--model", "m", "--base-url",
         fake_openai.base_url, "-C", str(ws), TASK],
        env=env, capture_output=True, timeout=120, stdin=subprocess.DEVNULL,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    events = [json.loads(line) for line in result.stdout.decode("utf-8").splitlines()]
    assert events[-1]["type"] == "run_finished" and events[-1]["answer"] == "Café crème."


def test_tool_finished_summary_is_one_line(tmp_path, fake_openai):
    # A missed edit's summary was its whole multi-line message, file lines included.
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "app.py").write_text("".join(f"value_{n} = {n}\n" for n in range(8)))
    fake_openai.enqueue(
        Reply(calls=[Call("edit", {"path": "app.py", "old_string": "value_3 = 33",
                                   "new_string": "value_3 = 4"})]),
        Reply("Done."),
    )  # fmt: skip
    result = _run(fake_openai, tmp_path, "--approval", "full")
    [finished] = _events(result, "tool_finished")
    assert finished["is_error"] and "\n" not in finished["summary"]
    assert "\n" in finished["output"]  # the whole message is still there
