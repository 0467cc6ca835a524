"""A session file that cannot be written (a full disk, a file size limit): each message
says so and the session stays usable. Driven for real in tmux, the size limit set by
the shell that starts lathe (`ulimit -f`), against the fake server."""

from __future__ import annotations

import os
import sys
from pathlib import Path

from tests.fakes.openai_server import FakeOpenAIServer, Reply
from tests.ui.conftest import _SRC
from tests.ui.tmux import Terminal


def test_a_session_that_cannot_be_written_fails_each_turn_and_never_freezes(
    fake_openai: FakeOpenAIServer, workspace: Path, lathe_home: Path, tmp_path: Path
) -> None:
    # The second message's run start failed before the turn's error handling: it showed
    # "thinking" for ever, Esc did nothing and nothing said why.
    fake_openai.enqueue(Reply("First."), Reply("Second."))
    env = {
        "PATH": os.environ["PATH"],
        "HOME": str(tmp_path),
        "XDG_CONFIG_HOME": str(tmp_path / "config"),
        "LATHE_HOME": str(lathe_home),
        "OPENAI_API_KEY": "test-key",
        "TERM": "xterm-256color",
        "LANG": "C.UTF-8",
        "PYTHONPATH": _SRC,
        "PYTHONDONTWRITEBYTECODE": "1",
    }
    lathe = [sys.executable, "-m", "lathe", "--model", "fake-model"]
    # 3 KiB: the input history holds the long first message, the session cannot.
    argv = ["bash", "-c", 'ulimit -f 3 && exec "$@"', "lathe", *lathe]
    argv += ["--base-url", fake_openai.base_url]
    term = Terminal(argv, env=env, cwd=str(workspace))
    try:
        term.wait_for(r"^> ", timeout=20)
        term.send("one " + "x" * 2600)
        term.wait_for(r"the turn failed: could not write the session")  # lathe's words alone
        term.wait_for(r"^> $")
        failed = term.screen().count("could not write the session")
        # A run under new settings records them first (`record_run_start`): that write
        # is what failed outside the turn's handling.
        term.send("/approval full")
        term.wait_for(r"^approval: full")
        term.send("two")
        screen = term.wait_for(r"^> two[\s\S]*could not write the session", timeout=10)
        assert screen.count("could not write the session") > failed, screen
        assert "thinking" not in term.screen(history=False).split("> two")[-1], term.screen()
        term.send("/cost")
        term.wait_for(r"^cost: ", timeout=10)  # the prompt is the person's again
        term.send("/exit")
        term.wait_exit()
    finally:
        term.close()
