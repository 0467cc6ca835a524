"""What a child's end leaves, through `lathe run` against the fake model: its work in a
nested repository comes back, what lathe set aside from its commands outlives its
folder, the special files of a copied workspace stop no child, nothing of it stays under
`worktrees/`, and a run stopped while it works counts what it spent."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from tests.fakes.openai_server import Call, Hang, Reply
from tests.sandboxes import needs
from tests.subagents.test_task_tool import (
    Script,
    _edit,
    _first_user_text,
    _project,
    _results,
    _run,
    _task,
)

from lathe.exec.bwrap import check_bubblewrap

_GIT = ["git", "-c", "user.name=t", "-c", "user.email=t@t"]


def _nested_repository(folder: Path) -> None:
    folder.mkdir()
    (folder / "f.txt").write_text("one\n")
    subprocess.run(["git", "init", "-q"], cwd=folder, check=True)
    subprocess.run([*_GIT, "add", "-A"], cwd=folder, check=True)
    subprocess.run([*_GIT, "commit", "-qm", "one"], cwd=folder, check=True)


@pytest.mark.parametrize("workspace_is_a_repository", [False, True])
def test_a_childs_edits_inside_a_nested_repository_come_back(
    tmp_path, fake_openai, workspace_is_a_repository
) -> None:
    # In a workspace that is no repository, the copy kept sub/.git: the child's folder
    # recorded sub/ as a gitlink, its edit of sub/f.txt never reached the patch, and the
    # result said "Files changed: top.txt" with nothing named as left behind.
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "top.txt").write_text("top\n")
    if workspace_is_a_repository:
        subprocess.run(["git", "init", "-q"], cwd=ws, check=True)
        subprocess.run([*_GIT, "add", "top.txt"], cwd=ws, check=True)
        subprocess.run([*_GIT, "commit", "-qm", "top"], cwd=ws, check=True)
    _nested_repository(ws / "sub")
    fake_openai.responder = Script(
        parent=[Reply(calls=[_task("n", "[child N] edit both")]), Reply("ok")],
        children={"[child N]": [Reply(calls=[_edit("sub/f.txt", "one", "TWO"),
                                             _edit("top.txt", "top", "TOP")]),
                                Reply("done")]},
    )  # fmt: skip

    result = _run(fake_openai, ws, tmp_path, "--approval", "full", "delegate")

    assert result.returncode == 0, result.stderr[-3000:]
    told = _results(result.stdout)["call_n"]["output"]
    assert (ws / "top.txt").read_text() == "TOP\n", told
    assert (ws / "sub" / "f.txt").read_text() == "TWO\n", told
    assert "sub/f.txt" in told and "top.txt" in told
    # The nested repository is still the user's, its history untouched.
    log = subprocess.run(["git", "log", "--oneline"], cwd=ws / "sub", capture_output=True,
                         text=True, check=True)  # fmt: skip
    assert len(log.stdout.splitlines()) == 1


def test_a_named_pipe_or_a_socket_in_the_workspace_stops_no_child(tmp_path, fake_openai) -> None:
    # The copy of a workspace that is no repository failed on them, and every `general`
    # child ended with a raw "`/…/ws/pipe` is a named pipe".
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "a.txt").write_text("a\n")
    os.mkfifo(ws / "pipe")
    listening = socket.socket(socket.AF_UNIX)
    short = Path(f"/tmp/lathe-sock-{os.getpid()}-{time.monotonic_ns()}")  # a path limit
    short.mkdir()
    try:
        listening.bind(str(short / "s"))
        os.rename(short / "s", ws / "app.sock")
        fake_openai.responder = Script(
            parent=[Reply(calls=[_task("p", "[child P] edit")]), Reply("ok")],
            children={"[child P]": [Reply(calls=[_edit("a.txt", "a", "X")]), Reply("done")]},
        )

        result = _run(fake_openai, ws, tmp_path, "--approval", "full", "delegate")
    finally:
        listening.close()
        short.rmdir()

    assert result.returncode == 0, result.stderr[-3000:]
    told = _results(result.stdout)["call_p"]
    assert not told["is_error"], told["output"]
    assert (ws / "a.txt").read_text() == "X\n"
    assert (ws / "pipe").exists() and (ws / "app.sock").exists()  # never touched


def test_nothing_of_a_finished_child_stays_under_worktrees(tmp_path, fake_openai) -> None:
    # A child that started a grandchild left worktrees/<its folder's slug>/.create.lock
    # for good: one folder more for every such child.
    ws = _project(tmp_path)
    fake_openai.responder = Script(
        parent=[Reply(calls=[_task("c", "[child C] delegate")]), Reply("ok")],
        children={
            "[child C]": [Reply(calls=[_task("g", "[grandchild G] edit")]), Reply("c done")],
            "[grandchild G]": [Reply(calls=[_edit("a.py", "A = 1", "A = 2")]),
                               Reply("g done")],
        },
    )  # fmt: skip

    result = _run(fake_openai, ws, tmp_path, "--approval", "full", "delegate")

    assert result.returncode == 0, result.stderr[-3000:]
    assert (ws / "a.py").read_text() == "A = 2\n"
    worktrees = tmp_path / "home" / "worktrees"
    # The workspace's own folder and lock stay (another run may be creating there).
    left = sorted(p.relative_to(worktrees).as_posix() for p in worktrees.rglob("*"))
    assert len(left) == 2 and left[1] == f"{left[0]}/.create.lock", left


@needs(check_bubblewrap(), "bubblewrap")
def test_what_lathe_sets_aside_from_a_childs_command_outlives_its_folder(
    tmp_path, fake_openai
) -> None:
    # It was moved into the child's folder, which goes when the child ends: the notice
    # named a path that no longer existed.
    ws = _project(tmp_path)
    command = "echo '{\"x\": 1}' > .mcp.json; echo made"
    fake_openai.responder = Script(
        parent=[Reply(calls=[_task("m", "[child M] set up")]), Reply("ok")],
        children={"[child M]": [Reply(calls=[Call("bash", {"command": command})]),
                                Reply("done")]},
    )  # fmt: skip

    result = _run(fake_openai, ws, tmp_path, "--approval", "auto", "delegate")

    assert result.returncode == 0, result.stderr[-3000:]
    assert not (ws / ".mcp.json").exists()
    said = next(
        e["event"]["output"]
        for e in map(json.loads, result.stdout.splitlines())
        if e["type"] == "child_event" and e["event"]["type"] == "tool_finished"
    )
    assert "moved it to" in said, said
    folder = Path(said.split("moved it to ", 1)[1].split("]", 1)[0])
    assert (folder / ".mcp.json").read_text() == '{"x": 1}\n', said
    assert not folder.is_relative_to(tmp_path / "home" / "worktrees")


def two_children_that_hang(fake_openai) -> None:
    """The parent starts two children; each edits a file, spending 1,000 tokens in and
    100 out, then hangs on its next request (`waiting_children` counts them there)."""
    child = {"prompt_tokens": 1000, "completion_tokens": 100, "total_tokens": 1100}
    fake_openai.responder = Script(
        parent=[Reply(calls=[_task("a", "[child A] edit"), _task("b", "[child B] edit")])],
        children={
            "[child A]": [Reply(calls=[_edit("a.py", "A = 1", "A = 2")], usage=child), Hang(120)],
            "[child B]": [Reply(calls=[_edit("b.py", "B = 1", "B = 2")], usage=child), Hang(120)],
        },
    )


def _stopped_while_children_work(
    tmp_path: Path, fake_openai, *args: str
) -> tuple[subprocess.Popen, dict[str, Any]]:
    ws = _project(tmp_path)
    two_children_that_hang(fake_openai)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("LATHE_", "OPENAI_"))}
    env.update(OPENAI_API_KEY="sk-test", LATHE_HOME=str(tmp_path / "home"),
               LATHE_CONFIG=os.devnull)  # fmt: skip
    process = subprocess.Popen(
        [sys.executable, "-m", "lathe", "run", "--json", "--model", "m", "--base-url",
         fake_openai.base_url, "-C", str(ws), "--approval", "full", *args, "go"],
        env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    return process, {"child_input": 1000, "child_output": 100}


def waiting_children(fake_openai) -> int:
    """How many children have asked for their second reply (the one that hangs)."""
    return sum(
        1
        for body in fake_openai.chat_bodies()
        if "[child" in _first_user_text(body)
        and sum(1 for m in body["messages"] if m["role"] == "assistant") == 1
    )


def _parent_run_end(tmp_path: Path) -> dict[str, Any]:
    for path in (tmp_path / "home" / "sessions").rglob("*.jsonl"):
        lines = [json.loads(line) for line in path.read_text().splitlines()]
        if not lines[0].get("parent_call"):
            return [e for e in lines if e.get("type") == "run_end"][-1]
    raise AssertionError("no parent session")


def test_a_run_stopped_while_its_children_work_counts_what_they_spent(
    tmp_path, fake_openai
) -> None:
    # Its run_end held the parent's own replies only (a normal end counts the children).
    process, spent = _stopped_while_children_work(tmp_path, fake_openai)
    try:
        deadline = time.monotonic() + 60
        while waiting_children(fake_openai) < 2 and time.monotonic() < deadline:
            time.sleep(0.05)
        assert waiting_children(fake_openai) == 2
        process.send_signal(signal.SIGTERM)
        _, stderr = process.communicate(timeout=60)
    finally:
        process.kill()

    assert process.returncode != 0, stderr[-3000:]
    usage = _parent_run_end(tmp_path)["usage"]
    parent_input = 12  # the fake server's default usage for the parent's one reply
    assert usage["input_tokens"] == parent_input + 2 * spent["child_input"], usage


def test_a_childs_folder_and_its_kept_patches_are_private(tmp_path) -> None:
    # Sessions and checkpoints were made 0700; a child's copy of the workspace (a 0600
    # .env stored by git as a 0444 object) and the patches of its changes were not.
    from lathe.subagents.worktree import create_worktree, remove_worktree

    ws, home = tmp_path / "ws", tmp_path / "home"
    ws.mkdir()
    (ws / ".env").write_text("TOKEN=x\n")
    (ws / ".env").chmod(0o600)
    old = os.umask(0o022)
    try:
        tree = create_worktree(ws, home, "c1")
    finally:
        os.umask(old)
    assert (tree.path.parent.stat().st_mode & 0o777) == 0o700
    remove_worktree(tree)
