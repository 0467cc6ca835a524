"""What a child's end leaves, through `lathe run` against the fake model: its work in a
nested repository comes back, what lathe set aside from its commands outlives its
folder, the special files of a copied workspace stop no child, and nothing of it stays
under `worktrees/`."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import time
from pathlib import Path

import pytest
from tests.fakes.openai_server import Call, Reply
from tests.sandboxes import needs
from tests.subagents.test_task_tool import Script, _edit, _project, _results, _run, _task

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
