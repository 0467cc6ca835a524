"""With no sandbox, the interactive app asks before each command it runs; the verify
check, which runs the model's code, ran without asking. Driven for real in tmux."""

from __future__ import annotations

from pathlib import Path

from tests.e2e.test_rules_hold_at_the_edges import _path_without_bwrap
from tests.fakes.openai_server import Call, FakeOpenAIServer, Reply


def _flat(screen: str) -> str:
    return " ".join(screen.split())  # a long line may wrap


def _a_check_that_leaves_a_mark(workspace: Path) -> Path:
    """check.py adds a line to the mark each time it runs."""
    mark = workspace.parent / "the-check-ran"
    (workspace / "check.py").write_text(f"open({str(mark)!r}, 'a').write('ran\\n')\n")
    return mark


def _launch_unsandboxed(launch, tmp_path: Path):
    return launch(
        "--approval", "auto", "--verify", "python check.py",
        env={"PATH": _path_without_bwrap(tmp_path)},
    )  # fmt: skip


def test_the_check_asks_before_it_runs_unsandboxed_and_a_no_keeps_it_from_running(
    launch, fake_openai: FakeOpenAIServer, workspace: Path, tmp_path: Path
) -> None:
    mark = _a_check_that_leaves_a_mark(workspace)
    fake_openai.enqueue(Reply("Done."))
    term = _launch_unsandboxed(launch, tmp_path)
    term.send("fix it")
    screen = _flat(term.wait_for(r"approve: run command"))  # the check before any change
    assert "python check.py" in screen.split("approve: run command")[-1], screen
    assert not mark.exists()
    term.send("n")
    screen = _flat(term.wait_for(r"the turn failed"))
    assert "declined" in screen.split("the turn failed")[-1], screen
    assert not mark.exists()
    assert fake_openai.chat_bodies() == []


def test_each_run_of_the_check_asks_as_each_command_does_until_allowed_always(
    launch, fake_openai: FakeOpenAIServer, workspace: Path, tmp_path: Path
) -> None:
    mark = _a_check_that_leaves_a_mark(workspace)
    fake_openai.enqueue(
        Reply(calls=[Call("bash", {"command": "echo hi"})]),
        Reply("Done."),
        Reply("Done again."),
    )
    term = _launch_unsandboxed(launch, tmp_path)
    term.send("fix it")
    term.wait_for(r"approve: run command")  # the check before any change
    term.send("y")
    term.wait_for(r"\$ echo hi")  # the model's own command asks, as before
    term.send("y")
    screen = _flat(term.wait_for(r"(?s)Done\..*approve: run command"))
    assert "python check.py" in screen.split("Done.")[-1], screen
    assert mark.read_text() == "ran\n"  # the baseline only, so far
    term.send("a")
    term.wait_for(r"verified")
    assert mark.read_text() == "ran\n" * 2
    term.send("and again")  # allowed always: the check of the next message asks no more
    term.wait_for(r"(?s)Done again\..*verified")
    assert mark.read_text() == "ran\n" * 3
