"""A loop of refused calls with varying arguments is a stall.

Seen with the local model in a held-out evaluation: read the test file at line N, write
the test file (denied), read at N+2, denied again, ... for the whole time budget. Each
call differed from the last, so the same-call rule never fired.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from tests.fakes.openai_server import Call, Reply


def test_refusals_of_one_kind_of_call_end_the_run_stuck(tmp_path: Path, fake_openai):
    ws = tmp_path / "ws"
    (ws / "tests").mkdir(parents=True)
    (ws / "tests" / "test_app.py").write_text("".join(f"# line {n}\n" for n in range(60)))
    replies = []
    for n in range(20):
        look = {"path": "tests/test_app.py", "offset": 1 + 2 * n}
        replies.append(Reply(calls=[Call("read", look)]))
        body = {"path": "tests/test_app.py", "content": f"assert {n}\n"}
        replies.append(Reply(calls=[Call("write", body)]))
    fake_openai.enqueue(*replies)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("LATHE_", "OPENAI_"))}
    env.update({"OPENAI_API_KEY": "sk-test", "LATHE_HOME": str(tmp_path / "home")})

    run = subprocess.run(
        [sys.executable, "-m", "lathe", "run", "--model", "m", "--base-url",
         fake_openai.base_url, "-C", str(ws), "--approval", "full", "--deny",
         "write(tests/**)", "--deny", "edit(tests/**)", "--max-turns", "40", "--json",
         "Make the tests pass"],
        cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120,
        stdin=subprocess.DEVNULL,
    )  # fmt: skip

    events = [json.loads(line) for line in run.stdout.splitlines() if line.startswith("{")]
    finished = next(e for e in events if e["type"] == "run_finished")
    assert finished["status"] == "stuck", finished
    assert "refused" in finished["reason"]
    assert finished["turns"] < 20  # long before the turn limit
    assert any(e["type"] == "stall_nudge" for e in events)  # the model was told first
    assert run.returncode == 1
    assert (ws / "tests" / "test_app.py").read_text().startswith("# line 0")


def test_calls_that_cannot_run_as_written_end_stuck_not_at_the_turn_limit(tmp_path, fake_openai):
    # An unknown tool name with other arguments each turn ran to max_turns (50 turns).
    import itertools

    from tests.e2e.test_run_edges import lathe_run

    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "a.py").write_text("x = 1\n")
    turn = itertools.count(1)
    fake_openai.responder = lambda body: Reply(
        calls=[Call("Read", {"file_path": "a.py", "offset": next(turn)})]
    )
    done = lathe_run(fake_openai, ws, tmp_path, "--approval", "full", "Read a.py")
    assert done.returncode == 1, done.stderr
    assert "status: stuck" in done.stderr
    assert len(fake_openai.chat_bodies()) <= 8


def test_the_same_call_repeated_within_one_reply_is_not_a_loop(tmp_path, fake_openai):
    # Four identical reads in one reply ended the run stuck at its first turn, before the
    # model saw a single result or a nudge.
    from tests.e2e.test_run_edges import lathe_run

    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "a.py").write_text("x = 1\n")
    same = [Call("read", {"path": "a.py"}, id=f"c{n}") for n in range(4)]
    fake_openai.enqueue(Reply(calls=same), Reply("x is 1."))
    done = lathe_run(fake_openai, ws, tmp_path, "--approval", "full", "What is x?")
    assert done.returncode == 0, done.stderr
    assert "status: unverified" in done.stderr
