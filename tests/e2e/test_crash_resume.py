"""kill -9 of `lathe run` at several points, then `lathe run --continue` finishes the
task against the fake server from what the session file kept."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from tests.e2e.test_calculator import EXAMPLE, PLAIN_PYTEST, fixing_script, workspace
from tests.fakes.openai_server import Call, Hang, Reply

VERIFY = "python -m pytest -q -p no:cacheprovider"


def _env(tmp_path: Path, base_url: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("LATHE_", "OPENAI_"))}
    env.update(
        PLAIN_PYTEST,
        OPENAI_API_KEY="sk-test",
        LATHE_HOME=str(tmp_path / "home"),
        LATHE_BASE_URL=base_url,
    )
    return env


def _start(ws: Path, env: dict[str, str]) -> subprocess.Popen:
    return subprocess.Popen(
        [sys.executable, "-m", "lathe", "run", "--model", "m", "-C", str(ws), "--verify", VERIFY,
         "Make the failing tests pass"],
        env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip


def _wait_for(condition, timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError("the condition never held")
        time.sleep(0.05)


def _continue(ws: Path, env: dict[str, str]) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "lathe", "run", "--continue", "--model", "m", "-C", str(ws),
         "--verify", VERIFY],
        env=env, capture_output=True, text=True, timeout=120,
    )  # fmt: skip


def _kill(process: subprocess.Popen) -> None:
    os.kill(process.pid, signal.SIGKILL)
    process.wait(timeout=10)


def _tests_pass(ws: Path) -> bool:
    check = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider"], cwd=ws,
                           env={**os.environ, **PLAIN_PYTEST}, capture_output=True)  # fmt: skip
    return check.returncode == 0


def test_killed_while_waiting_for_the_model_then_continued(tmp_path, fake_openai):
    ws = workspace(tmp_path)
    fake_openai.enqueue(fixing_script()[0], Hang(60))
    env = _env(tmp_path, fake_openai.base_url)
    process = _start(ws, env)
    _wait_for(lambda: len(fake_openai.chat_bodies()) == 2)
    _kill(process)

    fake_openai.enqueue(*fixing_script()[1:])
    resumed = _continue(ws, env)

    assert resumed.returncode == 0, resumed.stderr
    assert "status: verified" in resumed.stderr
    assert _tests_pass(ws)
    first_resumed = fake_openai.chat_bodies()[2]["messages"]
    # the task as first sent, with the verify command's result before any change
    assert first_resumed[1]["content"].startswith("Make the failing tests pass\n\nBefore you")
    assert any(m["role"] == "tool" and "def tax" in m["content"] for m in first_resumed)


def test_killed_mid_tool_then_continued_with_the_call_marked_interrupted(tmp_path, fake_openai):
    ws = workspace(tmp_path)
    marker = f"lathe-crash-test-{os.getpid()}"
    fake_openai.enqueue(
        Reply(calls=[Call("bash", {"command": f"touch started.flag; sleep 60 # {marker}"})])
    )
    env = _env(tmp_path, fake_openai.base_url)
    process = _start(ws, env)
    _wait_for(lambda: (ws / "started.flag").exists())
    _kill(process)
    subprocess.run(["pkill", "-9", "-f", marker], check=False)

    fake_openai.enqueue(*fixing_script())
    resumed = _continue(ws, env)

    assert resumed.returncode == 0, resumed.stderr
    assert _tests_pass(ws)
    messages = fake_openai.chat_bodies()[1]["messages"]
    results = [m for m in messages if m["role"] == "tool"]
    assert len(results) == 1 and "interrupted" in results[0]["content"]
    calls = [c for m in messages if m["role"] == "assistant" for c in m.get("tool_calls") or []]
    assert results[0]["tool_call_id"] == calls[0]["id"]


@pytest.mark.parametrize("after_requests", [3, 4])
def test_killed_between_turns_then_continued(tmp_path, fake_openai, after_requests):
    ws = workspace(tmp_path)
    script = fixing_script()
    fake_openai.enqueue(*script[: after_requests - 1], Hang(60))
    env = _env(tmp_path, fake_openai.base_url)
    process = _start(ws, env)
    _wait_for(lambda: len(fake_openai.chat_bodies()) == after_requests)
    _kill(process)

    fake_openai.enqueue(*script[after_requests - 1 :])
    resumed = _continue(ws, env)

    assert resumed.returncode == 0, resumed.stderr
    assert _tests_pass(ws)
    assert (ws / "calculator.py").read_text() != (EXAMPLE / "calculator.py").read_text()
