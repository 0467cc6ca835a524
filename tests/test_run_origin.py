"""`run_started` says whose its task is: a person's, or lathe's own words when it goes on
by itself (`--continue` with no task, a restart's paused calls). A client (the web page)
had to guess it from what came before."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from tests.fakes.openai_server import Reply


def _run(*args: str, ws: Path, home: Path, base_url: str) -> list[dict]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("LATHE_", "OPENAI_"))}
    env.update({"OPENAI_API_KEY": "sk-test-origin", "LATHE_HOME": str(home)})
    ran = subprocess.run(
        [sys.executable, "-m", "lathe", "run", "--json", "--model", "m", "--base-url", base_url,
         "-C", str(ws), *args],
        env=env, capture_output=True, text=True, timeout=120, stdin=subprocess.DEVNULL,
    )  # fmt: skip
    assert ran.returncode == 0, ran.stderr
    return [json.loads(line) for line in ran.stdout.splitlines()]


def test_a_task_given_is_the_users_and_lathes_continue_is_lathes(tmp_path, fake_openai):
    ws, home = tmp_path / "ws", tmp_path / "home"
    ws.mkdir()
    fake_openai.enqueue(Reply("looked"), Reply("went on"), Reply("and more"))
    given = _run("look around", ws=ws, home=home, base_url=fake_openai.base_url)
    went_on = _run("--continue", ws=ws, home=home, base_url=fake_openai.base_url)
    asked = _run("--continue", "and more?", ws=ws, home=home, base_url=fake_openai.base_url)

    started = [
        next(e for e in events if e["type"] == "run_started") for events in (given, went_on, asked)
    ]
    assert [(e["task"], e["origin"]) for e in started] == [
        ("look around", "user"),
        ("Continue the task from where you stopped.", "lathe"),
        ("and more?", "user"),
    ]
