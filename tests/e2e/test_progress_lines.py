"""What `lathe run`'s progress lines on stderr tell a person watching, through the real
CLI against the fake server: why a call was denied, and that a long command still runs."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from tests.fakes.openai_server import Call, Reply


def _env(tmp_path: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("LATHE_", "OPENAI_"))}
    env.update({"OPENAI_API_KEY": "sk-test", "LATHE_HOME": str(tmp_path / "home")})
    return env


def _argv(server, ws: Path, *args: str) -> list[str]:
    return [sys.executable, "-m", "lathe", "run", "--model", "m", "--base-url",
            server.base_url, "-C", str(ws), *args]  # fmt: skip


def _workspace(tmp_path: Path) -> Path:
    ws = tmp_path / "ws"
    (ws / "tests").mkdir(parents=True)
    (ws / "app.py").write_text("value = 1\n")
    (ws / "tests" / "test_app.py").write_text("def test_value():\n    assert True\n")
    subprocess.run(["git", "init", "-q", str(ws)], check=True)
    return ws


def _progress(server, ws: Path, tmp_path: Path, *args: str) -> list[str]:
    done = subprocess.run(
        _argv(server, ws, *args), cwd=tmp_path, env=_env(tmp_path), capture_output=True,
        text=True, timeout=120, stdin=subprocess.DEVNULL,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    return done.stderr.splitlines()


def test_a_denied_call_says_which_rule_or_reason_denied_it(tmp_path, fake_openai):
    ws = _workspace(tmp_path)
    fake_openai.enqueue(
        Reply(calls=[Call("write", {"path": "tests/test_app.py", "content": "pass\n"})]),
        Reply(calls=[Call("write", {"path": ".git/config", "content": "[core]\n"})]),
        Reply(calls=[Call("bash", {"command": "rm -rf /"})]),
        Reply("I will leave it."),
    )

    lines = _progress(fake_openai, ws, tmp_path, "--deny", "edit(tests/**)", "weaken the test")

    denials = [line.strip() for line in lines if " !! " in line]
    assert denials == [
        "write tests/test_app.py !! denied: edit(tests/**)",
        "write .git/config !! denied: protected path .git/config (needs approval)",
        "bash rm -rf / !! denied: rm -rf on / (the filesystem root, outside the workspace)",
    ]


def _run_on_a_pty(server, ws: Path, tmp_path: Path, *args: str) -> str:
    """`lathe run` with its stderr on a pseudo-terminal (stdout piped away): every byte
    it wrote there, control sequences included."""
    import fcntl
    import pty
    import struct
    import termios

    leader, follower = pty.openpty()
    fcntl.ioctl(follower, termios.TIOCSWINSZ, struct.pack("HHHH", 30, 100, 0, 0))
    process = subprocess.Popen(
        _argv(server, ws, *args), cwd=tmp_path, env=_env(tmp_path), stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL, stderr=follower,
    )  # fmt: skip
    os.close(follower)
    chunks = []
    while True:
        try:
            chunk = os.read(leader, 4096)
        except OSError:  # EIO: the last writer closed the terminal
            break
        if not chunk:
            break
        chunks.append(chunk)
    os.close(leader)
    assert process.wait(timeout=60) == 0
    return b"".join(chunks).decode()


@pytest.mark.waits
def test_on_a_terminal_a_long_call_shows_its_elapsed_time_in_place(tmp_path, fake_openai):
    ws = _workspace(tmp_path)
    fake_openai.enqueue(
        Reply(calls=[Call("bash", {"command": "sleep 3.5"})]),
        Reply("Done."),
    )
    check = "sleep 3.5; true"

    raw = _run_on_a_pty(
        fake_openai, ws, tmp_path, "--verify", check, "-c", "agent.verify_first=false", "wait"
    )

    assert "\r\x1b[K  bash sleep 3.5 ... 2s" in raw
    assert "\r\x1b[K  bash sleep 3.5 ... 3s" in raw
    assert f"\r\x1b[K  verify: {check} ... 3s" in raw
    # the in-place line is erased before the call's own line, which stays
    assert "\r\x1b[K  bash sleep 3.5 -> exit 0" in raw
    assert "still running" not in raw


@pytest.mark.waits
def test_without_a_terminal_a_long_call_shows_life_every_ten_seconds(tmp_path, fake_openai):
    ws = _workspace(tmp_path)
    fake_openai.enqueue(
        Reply(calls=[Call("bash", {"command": "sleep 11.5"})]),
        Reply(calls=[Call("bash", {"command": "sleep 1"})]),
        Reply("Done."),
    )

    lines = _progress(fake_openai, ws, tmp_path, "wait")

    assert [line for line in lines if "sleep" in line] == [
        "  bash sleep 11.5 ... still running (10s)",
        "  bash sleep 11.5 -> exit 0",
        "  bash sleep 1 -> exit 0",
    ]
    assert not any("\r" in line or "\x1b" in line for line in lines)


ESCAPES = "\x1b]0;PWNED\x07\x1b[2J\x1b[?1049h"


def test_escape_codes_a_model_wrote_are_shown_not_obeyed(tmp_path, fake_openai):
    # A reply's title and screen codes reached the terminal raw: on stdout as the answer,
    # on stderr in the line of the command it ran, and in `sessions export`.
    ws = _workspace(tmp_path)
    fake_openai.enqueue(
        Reply(calls=[Call("bash", {"command": f"echo hi # {ESCAPES}"})]),
        Reply(f"done {ESCAPES} here"),
    )
    done = subprocess.run(
        _argv(fake_openai, ws, "--approval", "full", "say hi"), cwd=tmp_path,
        env=_env(tmp_path), capture_output=True, text=True, timeout=120,
        stdin=subprocess.DEVNULL,
    )  # fmt: skip
    assert "\x1b" not in done.stdout and "\x1b" not in done.stderr
    assert "done \\x1b]0;PWNED\\x07" in done.stdout
    assert "echo hi # \\x1b]0;PWNED" in done.stderr
    listed = subprocess.run(
        [sys.executable, "-m", "lathe", "sessions", "list"], cwd=ws,
        env=_env(tmp_path), capture_output=True, text=True, timeout=60, check=True,
    )  # fmt: skip
    session_id = listed.stdout.split("\t")[0]
    exported = subprocess.run(
        [sys.executable, "-m", "lathe", "sessions", "export", session_id], cwd=ws,
        env=_env(tmp_path), capture_output=True, text=True, timeout=60, check=True,
    )  # fmt: skip
    assert "\x1b" not in exported.stdout and "\x07" not in exported.stdout
    assert "done \\x1b]0;PWNED\\x07" in exported.stdout


def test_a_verify_that_timed_out_says_so_not_exit_none(tmp_path, fake_openai):
    ws = _workspace(tmp_path)
    fake_openai.enqueue(Reply("Done."), Reply("Done."), Reply("Done."))
    done = subprocess.run(
        _argv(fake_openai, ws, "--approval", "full", "-c", "agent.verify_timeout_s=1",
              "--verify", "sleep 30", "--max-turns", "1", "fix it"),
        cwd=tmp_path, env=_env(tmp_path), capture_output=True, text=True, timeout=120,
        stdin=subprocess.DEVNULL,
    )  # fmt: skip
    assert "exit None" not in done.stderr
    assert "timed out after 1s (agent.verify_timeout_s)" in done.stderr
