"""Ctrl-Z at the interactive prompt, driven for real in tmux against the fake server: it
had put a raw \\x1a in the message (the model received '\\x1ahello'). Started from a shell
with job control, lathe stops like any terminal program and works again after `fg`;
where nothing could start it again, the key does nothing."""

from __future__ import annotations

import os
import shlex
import sys
import time
from pathlib import Path

from tests.fakes.openai_server import FakeOpenAIServer, Reply
from tests.ui.tmux import Terminal

_SRC = str(Path(__file__).resolve().parents[2] / "src")


def _user_texts(fake_openai: FakeOpenAIServer) -> list[str]:
    return [m["content"] for m in fake_openai.chat_bodies()[-1]["messages"] if m["role"] == "user"]


def test_ctrl_z_without_job_control_does_nothing(launch, fake_openai: FakeOpenAIServer) -> None:
    fake_openai.enqueue(Reply("Hello back."))
    term = launch()  # tmux runs it as the session's leader: no shell could resume it
    term.type("hel")
    term.keys("C-z")
    time.sleep(0.5)
    term.send("lo")
    term.wait_for(r"^Hello back\.")
    assert _user_texts(fake_openai) == ["hello"]


def test_ctrl_z_suspends_to_the_shell_and_fg_brings_the_prompt_back(
    fake_openai: FakeOpenAIServer, workspace: Path, lathe_home: Path, tmp_path: Path
) -> None:
    fake_openai.enqueue(Reply("Hello back."))
    env = {
        "PATH": os.environ["PATH"],
        "HOME": str(tmp_path),
        "XDG_CONFIG_HOME": str(tmp_path / "config"),
        "LATHE_HOME": str(lathe_home),
        "OPENAI_API_KEY": "test-key",
        "TERM": "xterm-256color",
        "LANG": "C.UTF-8",
        "PYTHONPATH": _SRC,
        "PS1": "shell$ ",
    }
    term = Terminal(["bash", "--norc", "--noprofile", "-i"], env=env, cwd=str(workspace))
    try:
        term.wait_for(r"^shell\$ ")
        lathe = [sys.executable, "-m", "lathe", "--model", "fake-model"]
        term.send(shlex.join([*lathe, "--base-url", fake_openai.base_url]))
        term.wait_for(r"ctx \d+% of")
        term.type("hel")
        term.keys("C-z")
        screen = term.wait_for(r"Stopped.*\n(.*\n)*shell\$ $")
        term.send("fg")
        term.wait_for(r"^> hel", after=len(screen))  # drawn again, the draft kept
        term.send("lo")
        term.wait_for(r"^Hello back\.")
        assert _user_texts(fake_openai) == ["hello"]
        term.keys("C-d")
        term.wait_for(r"^shell\$ $", after=len(screen))
    finally:
        term.close()
