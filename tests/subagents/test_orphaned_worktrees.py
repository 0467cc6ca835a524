"""Children's folders a killed lathe left, through `lathe run` against the fake model: the
next run in the workspace keeps each one's changes as a patch, tells the user the
`git apply` that lands them, and removes the folder; a folder whose lathe still runs is
never touched. They had stayed under `worktrees/` for good, their work unsaid."""

from __future__ import annotations

import json
import os
import shlex
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

from tests.fakes.openai_server import Call, Hang, Reply
from tests.subagents.test_task_tool import Script, _edit, _project, _run, _task
from tests.subagents.test_what_a_child_leaves import waiting_children

from lathe.file_lock import is_held
from lathe.subagents.worktree import owner_file, worktrees_root


def _child_folders(tmp_path: Path) -> list[Path]:
    return sorted(p for p in (tmp_path / "home" / "worktrees").glob("*/*") if p.is_dir())


def _notices(stdout: str) -> list[str]:
    return [e["message"] for e in map(json.loads, stdout.splitlines()) if e["type"] == "notice"]


def _start_with_children_at_work(tmp_path: Path, ws: Path, server) -> subprocess.Popen:
    """A run whose two children (the second a grandchild) have each edited a file and
    wait on their next reply."""
    server.responder = Script(
        parent=[Reply(calls=[_task("a", "[child A] edit")])],
        children={
            "[child A]": [Reply(calls=[_edit("a.py", "A = 1", "A = 2")]),
                          Reply(calls=[_task("b", "[child B] edit")]), Hang(120)],
            "[child B]": [Reply(calls=[_edit("b.py", "B = 1", "B = 2")]), Hang(120)],
        },
    )  # fmt: skip
    env = {k: v for k, v in os.environ.items() if not k.startswith(("LATHE_", "OPENAI_"))}
    env.update(OPENAI_API_KEY="sk-test", LATHE_HOME=str(tmp_path / "home"),
               LATHE_CONFIG=os.devnull)  # fmt: skip
    process = subprocess.Popen(
        [sys.executable, "-m", "lathe", "run", "--json", "--model", "m", "--base-url",
         server.base_url, "-C", str(ws), "--approval", "full", "go"],
        env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    deadline = time.monotonic() + 60
    while waiting_children(server) < 2 and time.monotonic() < deadline:
        time.sleep(0.05)
    assert waiting_children(server) == 2
    return process


def test_a_killed_runs_children_are_kept_as_patches_by_the_next_run(tmp_path, fake_openai) -> None:
    ws = _project(tmp_path)
    process = _start_with_children_at_work(tmp_path, ws, fake_openai)
    process.send_signal(signal.SIGKILL)
    process.wait(timeout=30)
    assert len(_child_folders(tmp_path)) == 2  # the child's and the grandchild's

    fake_openai.responder = Script(parent=[Reply("nothing to do")], children={})
    result = _run(fake_openai, ws, tmp_path, "--approval", "full", "again")

    assert result.returncode == 0, result.stderr[-3000:]
    assert _child_folders(tmp_path) == []
    told = [n for n in _notices(result.stdout) if "git apply" in n]
    assert len(told) == 2, _notices(result.stdout)
    assert (ws / "a.py").read_text() == "A = 1\n"  # kept, not applied
    for notice in told:  # each command lands its child's changes
        command = notice.split("`")[1]
        subprocess.run(shlex.split(command), cwd=ws, check=True)
    assert (ws / "a.py").read_text() == "A = 2\n"
    assert (ws / "b.py").read_text() == "B = 2\n"


def test_the_folders_of_children_whose_lathe_still_runs_are_left_alone(
    tmp_path, fake_openai
) -> None:
    # A guard on the sweep: a read-only run may start beside one that works.
    ws = _project(tmp_path)
    process = _start_with_children_at_work(tmp_path, ws, fake_openai)
    try:
        before = _child_folders(tmp_path)
        fake_openai.responder = Script(parent=[Reply("nothing to do")], children={})
        result = _run(fake_openai, ws, tmp_path, "--approval", "read-only", "look")
        assert result.returncode == 0, result.stderr[-3000:]
        assert _child_folders(tmp_path) == before
        assert (before[0] / "a.py").read_text() == "A = 2\n"
        assert not [n for n in _notices(result.stdout) if "subagent" in n]
    finally:
        process.kill()
        process.wait(timeout=30)


def test_a_folder_kept_for_the_user_is_left_to_them_by_later_runs(tmp_path, fake_openai) -> None:
    # Its changes could not be read back, so the user was told to copy from it. Its
    # owner lock stayed held (leaked in a long-lived app) and the next run took it for a
    # killed lathe's: "cut off ... (killed?)", and once saving worked, the folder went.
    ws = _project(tmp_path)
    fake_openai.responder = Script(
        parent=[Reply(calls=[_task("b", "[child B] edit")]), Reply("ok")],
        children={"[child B]": [Reply(calls=[_edit("a.py", "A = 1", "A = 2"),
                                             Call("bash", {"command": "echo x > .git/index"})]),
                                Reply("done")]},
    )  # fmt: skip
    first = _run(fake_openai, ws, tmp_path, "--approval", "full", "delegate")
    assert first.returncode == 0, first.stderr[-3000:]
    [folder] = _child_folders(tmp_path)
    assert [n for n in _notices(first.stdout) if str(folder) in n]
    assert not is_held(owner_file(folder)) and not owner_file(folder).exists()

    (folder / ".git" / "index").unlink()  # saving would work now: it must not be tried
    for _ in range(2):
        fake_openai.responder = Script(parent=[Reply("nothing to do")], children={})
        again = _run(fake_openai, ws, tmp_path, "--approval", "full", "again")
        assert again.returncode == 0, again.stderr[-3000:]
        assert not [n for n in _notices(again.stdout) if "subagent" in n], again.stdout
        assert _child_folders(tmp_path) == [folder]
        assert (folder / "a.py").read_text() == "A = 2\n"

    shutil.rmtree(folder)  # the user is done with it: its marker goes with the next run
    fake_openai.responder = Script(parent=[Reply("nothing to do")], children={})
    assert _run(fake_openai, ws, tmp_path, "--approval", "full", "again").returncode == 0
    assert list(folder.parent.iterdir()) == [folder.parent / ".create.lock"]


def test_a_run_starts_while_another_lathe_makes_a_childs_folder(tmp_path, fake_openai) -> None:
    # The sweep waited on the creation lock, which a lathe holds for the whole copy of
    # the workspace: every run's start stalled behind another's copy of a large one.
    ws = _project(tmp_path)
    root = worktrees_root(ws, tmp_path / "home")
    (root / "someone-elses-child").mkdir(parents=True)
    holder = subprocess.Popen(
        [sys.executable, "-c", "import fcntl, sys, time\n"
         "f = open(sys.argv[1], 'a'); fcntl.flock(f, fcntl.LOCK_EX); print(flush=True)\n"
         "time.sleep(300)", str(root / ".create.lock")],
        stdout=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        assert holder.stdout is not None and holder.stdout.readline() == "\n"
        fake_openai.responder = Script(parent=[Reply("nothing to do")], children={})
        started = time.monotonic()
        result = _run(fake_openai, ws, tmp_path, "--approval", "full", "go")
        assert result.returncode == 0, result.stderr[-3000:]
        assert time.monotonic() - started < 60
        assert (root / "someone-elses-child").is_dir()
    finally:
        holder.kill()
        holder.wait(timeout=30)
