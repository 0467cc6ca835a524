"""What a batch's tasks leave under LATHE_HOME, through the real CLI against the scripted
fake model: each task's lathe ran in a temporary copy no later run takes up, and its
checkpoints (a copy of every file, `.env` included), locks, children's folders and
patches stayed there for good. Only its session stays: the result names it."""

from __future__ import annotations

import os
import signal
import subprocess
import time
from pathlib import Path

import pytest
from tests.batch.tasks import batch_argv, batch_env, fix, make_task, result_lines, run_batch
from tests.fakes.openai_server import Call, Hang, Reply
from tests.service.scripts import by_marker

CHILD = "[child c1]"


def _env(tmp_path: Path) -> dict[str, str]:
    """The batch's environment, its task copies (a kept one too) in the test's folder."""
    (tmp_path / "tmp").mkdir(exist_ok=True)
    return {**batch_env(tmp_path), "TMPDIR": str(tmp_path / "tmp")}


def _traces(home: Path) -> list[str]:
    """What is kept under `home` for a task's copy, its sessions aside."""
    return sorted(
        str(path.relative_to(home))
        for kind in ("checkpoints", "locks", "worktrees", "patches")
        for path in (home / kind).glob("*")
        if "lathe-task-" in path.name
    )


@pytest.mark.parametrize("keep", [False, True], ids=["removed", "kept"])
def test_a_tasks_checkpoints_and_locks_go_with_its_copy(tmp_path, fake_openai, keep):
    make_task(tmp_path / "tasks", "t1")
    fake_openai.responder = by_marker({"Task t1": fix("t1")})
    run = tmp_path / "run"

    done = run_batch(tmp_path, tmp_path / "tasks", run, fake_openai, *(["--keep"] * keep),
                     env=_env(tmp_path))  # fmt: skip

    assert done.returncode == 0, done.stderr
    [line] = result_lines(run)
    assert line["status"] == "solved" and Path(line["session_file"]).is_file()
    home = tmp_path / "home"
    if not keep:
        assert _traces(home) == []
    else:  # the user's copy: `lathe undo` there still works
        assert any(trace.startswith("checkpoints/") for trace in _traces(home))


def _child_at_work(fake_openai) -> int:
    """How many requests the child made (it hangs on its second)."""
    return sum(1 for body in fake_openai.chat_bodies() if CHILD in str(body["messages"][:2]))


@pytest.mark.parametrize("stop", ["interrupted", "wall limit"])
def test_a_stopped_tasks_children_leave_nothing_behind(tmp_path, fake_openai, stop):
    # The task's lathe was killed (or stopped itself at --max-wall) while its child
    # worked: the child's folder, a copy of the task's files, stayed under worktrees/
    # (its work as a patch under patches/) for a later run there, which never comes.
    make_task(tmp_path / "tasks", "t1")
    brief = {"description": "c1", "prompt": f"{CHILD} fix add in calc.py"}
    edit = Call("edit", {"path": "calc.py", "old_string": "a - b", "new_string": "a + b"})
    fake_openai.responder = by_marker({
        CHILD: [Reply(calls=[edit]), Hang(120)],
        "Task t1": [Reply(calls=[Call("task", brief)]), Reply("t1: done.")],
    })  # fmt: skip
    extra = ("--max-wall", "15s") if stop == "wall limit" else ()
    argv = batch_argv(tmp_path / "tasks", tmp_path / "run", fake_openai, *extra)
    process = subprocess.Popen(argv, env=_env(tmp_path), stdin=subprocess.DEVNULL,
                               stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                               text=True)  # fmt: skip
    try:
        deadline = time.monotonic() + 90
        while _child_at_work(fake_openai) < 2:
            assert process.poll() is None and time.monotonic() < deadline, "no child worked"
            time.sleep(0.2)
        assert _traces(tmp_path / "home")  # the child's folder among them
        if stop == "interrupted":
            process.send_signal(signal.SIGINT)

        _, errors = process.communicate(timeout=120)

        assert process.returncode == (130 if stop == "interrupted" else 0), errors
        assert _traces(tmp_path / "home") == []
        assert list((tmp_path / "home" / "worktrees").rglob("*")) == []
    finally:
        process.kill()


def test_a_kept_copy_outlives_its_batch_killed_with_9(tmp_path, fake_openai):
    # The next batch's sweep took the copy of a --keep batch killed with -9 for a
    # leftover, and its checkpoints with it: the owner mark went only as the task ended.
    make_task(tmp_path / "tasks", "t1")
    make_task(tmp_path / "more", "t2")
    edit = Call("edit", {"path": "calc.py", "old_string": "a - b", "new_string": "a + b"})
    fake_openai.responder = by_marker({"Task t1": [Reply(calls=[edit]), Hang(120)],
                                       "Task t2": fix("t2")})  # fmt: skip
    argv = batch_argv(tmp_path / "tasks", tmp_path / "run", fake_openai, "--keep")
    process = subprocess.Popen(argv, env=_env(tmp_path), stdin=subprocess.DEVNULL,
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                               start_new_session=True)  # fmt: skip
    try:
        deadline = time.monotonic() + 90
        while len(fake_openai.chat_bodies()) < 2:
            assert process.poll() is None and time.monotonic() < deadline, "t1 never edited"
            time.sleep(0.2)
        [kept] = (tmp_path / "tmp").glob("lathe-task-*")
        assert (kept / "work" / "calc.py").read_text() == "def add(a, b):\n    return a + b\n"
        traces = _traces(tmp_path / "home")
        assert any(trace.startswith("checkpoints/") for trace in traces), traces
    finally:
        os.killpg(process.pid, signal.SIGKILL)
        process.wait()

    done = run_batch(tmp_path, tmp_path / "more", tmp_path / "run2", fake_openai,
                     env=_env(tmp_path))  # fmt: skip

    assert done.returncode == 0, done.stderr
    assert (kept / "work" / "calc.py").read_text() == "def add(a, b):\n    return a + b\n"
    assert [t for t in _traces(tmp_path / "home") if t.startswith("checkpoints/")] == [
        t for t in traces if t.startswith("checkpoints/")
    ]
