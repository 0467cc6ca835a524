"""The verify gate across the messages of one interactive conversation, driven for real
in tmux against the fake server."""

from __future__ import annotations

from pathlib import Path

from tests.fakes.openai_server import Call, FakeOpenAIServer, Reply


def _flat(screen: str) -> str:
    return " ".join(screen.split())  # a long line may wrap


def test_a_follow_up_keeps_the_caveat_of_the_check_files_changed_before(
    launch, fake_openai: FakeOpenAIServer, workspace: Path
) -> None:
    # Each message's run took the check files as it found them: after a message whose
    # run weakened a test, the next one ended in a plain "verified".
    (workspace / "tests").mkdir()
    (workspace / "tests" / "test_app.py").write_text(
        "from app import add\n\n\ndef test_add():\n    assert add(2, 3) == 5\n"
    )
    weaken = Call("edit", {"path": "tests/test_app.py", "old_string": "== 5",
                           "new_string": "== -1"})  # fmt: skip
    fake_openai.enqueue(Reply(calls=[weaken]), Reply("Done."), Reply("Yes, it is done."))
    term = launch("--approval", "full", "--verify", "python -m pytest -q -p no:cacheprovider")
    term.send("fix add")
    term.wait_for(r"own files changed")
    term.send("are you sure?")
    term.wait_for(r"Yes, it is done\.")
    screen = _flat(term.wait_for(r"(?s)Yes, it is done\..*verified"))
    after = screen.split("Yes, it is done.")[-1]
    assert "tests/test_app.py" in after, screen
