"""`lathe --continue` in the app goes on with what the session's last run started with,
as `lathe run --continue` does, and says so: a read-only session had come back in the
app's default `ask`, able to change files once approved, without a word."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from tests.fakes.openai_server import Call, FakeOpenAIServer, Reply


def _headless(fake_openai: FakeOpenAIServer, workspace: Path, home: Path, *args: str) -> str:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("LATHE_", "OPENAI_"))}
    env.update(OPENAI_API_KEY="test-key", LATHE_HOME=str(home), HOME=str(home.parent))
    result = subprocess.run(
        [sys.executable, "-m", "lathe", "run", "--model", "fake-model", "--base-url",
         fake_openai.base_url, "-C", str(workspace), *args],
        env=env, capture_output=True, text=True, timeout=120, stdin=subprocess.DEVNULL,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    return result.stderr


def test_a_read_only_session_continued_in_the_app_stays_read_only_and_says_so(
    launch, fake_openai: FakeOpenAIServer, workspace: Path, lathe_home: Path
) -> None:
    fake_openai.enqueue(Reply("Looked."))
    _headless(fake_openai, workspace, lathe_home, "--approval", "read-only", "look around")
    write = Call("write", {"path": "new.py", "content": "x = 1\n"})
    fake_openai.enqueue(Reply(calls=[write]), Reply("Tried."))

    term = launch("--continue")
    term.wait_for(r"continuing session \w+ with approval read-only \(from the session\)")
    term.send("now write new.py")
    term.wait_for(r"^Tried\.")

    assert not (workspace / "new.py").exists()
