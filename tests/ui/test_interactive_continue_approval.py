"""`lathe --continue` in the app takes a session's approval only when it is tighter than
the app's `ask` (`read-only`): a headless run's `auto` (its default) or `full` had come
back in the app, which then wrote files and ran commands without asking. The note says
what was not carried over and how to have it."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from tests.fakes.openai_server import Call, FakeOpenAIServer, Reply
from tests.ui.test_interactive_continue_settings import _headless


@pytest.mark.parametrize("given", [[], ["--approval", "auto"], ["--approval", "full"]])
def test_a_looser_approval_is_not_carried_into_the_app_which_asks(
    launch, fake_openai: FakeOpenAIServer, workspace: Path, lathe_home: Path, given: list[str]
) -> None:
    fake_openai.enqueue(Reply("Looked."))
    _headless(fake_openai, workspace, lathe_home, *given, "look around")
    write = Call("write", {"path": "new.py", "content": "x = 1\n"})
    fake_openai.enqueue(Reply(calls=[write]), Reply("Stopped."))
    mode = given[1] if given else "auto"

    term = launch("--continue")
    term.wait_for(r"── now ──")
    term.wait_for(r"tokens · ask")  # the prompt is up, in the app's own mode
    term.send("now write new.py")
    screen = term.wait_for(r"approve: write new\.py")

    assert not (workspace / "new.py").exists()
    assert re.search(
        rf"continuing session \w+; approval {mode} was not carried over: give --approval "
        rf"{mode} \(or /approval {mode}\) to go on with it",
        " ".join(screen.split()),  # the note wraps
    )
    term.send("n")
    term.wait_for(r"^Stopped\.")
    assert not (workspace / "new.py").exists()
