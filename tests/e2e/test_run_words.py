"""The words of `lathe run`'s progress lines, reproduced on main with the real CLI:

- counts took a plural noun whatever the count: "1 lines", "1 entries", "after 1
  turn(s)", "gave up after 1 attempts";
- a run that changed no file ended with "no test was run after the last edit".
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from tests.fakes.openai_server import Call, Reply, not_found, server_error, unauthorized


def lathe_run(server, ws: Path, tmp_path: Path, *args: str) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("LATHE_", "OPENAI_"))}
    env.update({"OPENAI_API_KEY": "sk-test", "LATHE_HOME": str(tmp_path / "home")})
    return subprocess.run(
        [sys.executable, "-m", "lathe", "run", "--model", "m", "--base-url", server.base_url,
         "-C", str(ws), *args],
        cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120,
        stdin=subprocess.DEVNULL,
    )  # fmt: skip


def _workspace(tmp_path: Path) -> Path:
    ws = tmp_path / "ws"
    (ws / "pkg").mkdir(parents=True)
    (ws / "pkg" / "one.txt").write_text("only line\n")
    return ws


def _progress(result: subprocess.CompletedProcess, prefix: str) -> str:
    return next(line for line in result.stderr.splitlines() if line.strip().startswith(prefix))


def test_a_count_of_one_takes_the_singular(tmp_path, fake_openai):
    ws = _workspace(tmp_path)
    fake_openai.enqueue(
        Reply(calls=[
            Call("read", {"path": "pkg/one.txt"}),
            Call("ls", {"path": "pkg"}),
            Call("glob", {"pattern": "*.txt"}),
            Call("grep", {"pattern": "only"}),
        ]),
        Reply(calls=[Call("write", {"path": "new.txt", "content": "one\n"})]),
        Reply("Done."),
    )  # fmt: skip

    result = lathe_run(fake_openai, ws, tmp_path, "look around")

    assert result.returncode == 0, result.stderr
    assert _progress(result, "read pkg/one.txt").endswith("-> 1 line")
    assert _progress(result, "ls pkg").endswith("-> 1 entry")
    assert _progress(result, "glob").endswith("-> 1 file")
    assert _progress(result, "grep").endswith("-> 1 match")
    assert _progress(result, "write new.txt").endswith("-> created, 1 line")
    assert _progress(result, "status:").startswith("status: unverified after 3 turns;")

    fake_openai.enqueue(Reply("Hello."))
    once = lathe_run(fake_openai, ws, tmp_path, "say hello")
    assert _progress(once, "status:").startswith("status: unverified after 1 turn;")


def test_giving_up_after_one_attempt_says_attempt(tmp_path, fake_openai):
    ws = _workspace(tmp_path)
    fake_openai.enqueue(server_error(503))

    result = lathe_run(fake_openai, ws, tmp_path, "-c", "retry.max_attempts=1", "task")

    assert result.returncode == 3, result.stderr
    assert "gave up after 1 attempt)" in result.stderr


def test_a_run_that_changed_no_file_does_not_speak_of_the_last_edit(tmp_path, fake_openai):
    ws = _workspace(tmp_path)
    fake_openai.enqueue(
        Reply(calls=[Call("write", {"path": "new.txt", "content": "one\n"})]),
        Reply("Wrote it."),
    )
    wrote = lathe_run(fake_openai, ws, tmp_path, "write new.txt")
    assert wrote.returncode == 0, wrote.stderr
    assert wrote.stderr.splitlines()[-1] == (
        "  no test was run after the last edit; use --verify CMD to check"
    )
    # Turn 1 again, in a workspace whose newest checkpoint is the last run's turn 1.
    fake_openai.enqueue(
        Reply(calls=[Call("read", {"path": "pkg/one.txt"}), Call("bash", {"command": "true"})]),
        Reply("It holds one line."),
    )

    result = lathe_run(fake_openai, ws, tmp_path, "what is in pkg/one.txt?")

    assert result.returncode == 0, result.stderr
    assert "last edit" not in result.stderr
    assert _progress(result, "status:") == result.stderr.splitlines()[-2]
    assert result.stderr.splitlines()[-1] == "  no file was changed"


def test_a_run_ended_by_a_provider_error_says_it_in_one_lathe_line(tmp_path, fake_openai):
    ws = _workspace(tmp_path)
    fake_openai.enqueue(unauthorized())
    denied = lathe_run(fake_openai, ws, tmp_path, "task")
    assert denied.returncode == 3
    last = denied.stderr.splitlines()[-1]
    assert last.startswith("lathe: the API key was rejected by ")
    assert "check OPENAI_API_KEY" in last

    fake_openai.enqueue(not_found("m"))
    missing = lathe_run(fake_openai, ws, tmp_path, "task")
    last = missing.stderr.splitlines()[-1]
    assert last.startswith("lathe: ")
    assert "404" in last and last.count("404") == 1
    assert ".." not in last


def test_a_local_endpoint_that_wants_a_key_when_none_is_set_says_to_set_one(
    tmp_path, fake_openai
):
    # "the API key was rejected ... check OPENAI_API_KEY holds a valid key", with no key set.
    ws = _workspace(tmp_path)
    fake_openai.enqueue(unauthorized())
    env = {k: v for k, v in os.environ.items() if not k.startswith(("LATHE_", "OPENAI_"))}
    env["LATHE_HOME"] = str(tmp_path / "home")
    result = subprocess.run(
        [sys.executable, "-m", "lathe", "run", "--model", "m", "--base-url", fake_openai.base_url,
         "-C", str(ws), "task"],
        cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120,
        stdin=subprocess.DEVNULL,
    )  # fmt: skip
    last = result.stderr.splitlines()[-1]
    assert "none is set" in last and "rejected" not in last, last


def test_an_emoji_split_between_two_stream_chunks_arrives_whole(tmp_path, fake_openai):
    # A UTF-16 pair cut in two by the server's chunks (`"\ud83d"`, then `"\ude00"`) failed
    # the whole run: "Error serializing to JSON: ... surrogates not allowed".
    ws = _workspace(tmp_path)
    fake_openai.enqueue(Reply("smile \ud83d\ude00 ok \ud800!", text_chunk=7))

    result = lathe_run(fake_openai, ws, tmp_path, "--json", "say hello")

    assert result.returncode == 0, result.stderr
    finished = [e for e in map(json.loads, result.stdout.splitlines())
                if e["type"] == "run_finished"][-1]  # fmt: skip
    assert finished["answer"] == "smile \U0001f600 ok \ufffd!"
