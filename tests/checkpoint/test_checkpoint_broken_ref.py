"""A store whose ref (`git/refs/lathe/checkpoints`) a crash left empty or torn, through the
real CLI against the fake server. Its commits were all there, yet `checkpoints list` said
"no checkpoints yet", `undo` said "nothing to undo", and the next `lathe run` refused
with "reference broken; move ... aside". The ref is now found again: the newest
checkpoint of the longest chain the store holds.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest
from tests.checkpoint.helpers import lathe, shell
from tests.fakes.openai_server import Call, Reply

from lathe.checkpoint import Checkpoints


def run(server, ws: Path, tmp_path: Path, command: str) -> None:
    server.enqueue(Reply(calls=[Call("bash", {"command": command})]), Reply("Done."))
    done = lathe(
        tmp_path, "run", "--model", "m", "--base-url", server.base_url, "--approval", "full",
        "-C", str(ws), "go",
    )  # fmt: skip
    assert done.returncode == 0, done.stderr


def the_ref(home: Path) -> Path:
    (store,) = (home / "checkpoints").iterdir()
    return store / "git" / "refs" / "lathe" / "checkpoints"


@pytest.mark.parametrize("torn", [b"", b"3f2a", b"\0" * 41])
def test_every_command_finds_the_checkpoints_again(tmp_path, fake_openai, torn):
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "a.txt").write_text("a\n")
    run(fake_openai, ws, tmp_path, "echo b > a.txt")
    the_ref(tmp_path / "home").write_bytes(torn)

    listed = lathe(tmp_path, "checkpoints", "list", "-C", str(ws))
    assert listed.returncode == 0, listed.stderr
    assert [line.split("\t")[3] for line in listed.stdout.splitlines()] == [
        "after turn 1",
        "before turn 1",
    ]

    the_ref(tmp_path / "home").write_bytes(torn)
    run(fake_openai, ws, tmp_path, "echo c > c.txt")  # refused with "reference broken"
    the_ref(tmp_path / "home").write_bytes(torn)
    undone = lathe(tmp_path, "undo", "-C", str(ws))
    assert undone.returncode == 0, undone.stderr
    assert not (ws / "c.txt").exists() and (ws / "a.txt").read_text() == "b\n"


def test_the_chain_found_is_the_longest_not_a_commit_a_race_left_behind(
    cp: Checkpoints, ws: Path, home: Path
) -> None:
    (ws / "a").write_text("0\n")
    for turn in (1, 2, 3):
        cp.before_turn(turn)
        shell(ws, f"echo {turn} > a")
        cp.after_turn(turn)
    chain = cp.list()
    # A writer that lost the race for the ref leaves its commit, on an older parent,
    # and newer than every other.
    git_dir = the_ref(home).parents[2]
    subprocess.run(
        ["git", f"--git-dir={git_dir}", "commit-tree", chain[2].tree, "-p", chain[2].commit,
         "-m", "lost"],
        env={**os.environ, "GIT_COMMITTER_DATE": "@4102444800 +0000", "GIT_AUTHOR_NAME": "l",
             "GIT_AUTHOR_EMAIL": "l@x", "GIT_COMMITTER_NAME": "l", "GIT_COMMITTER_EMAIL": "l@x"},
        check=True, capture_output=True,
    )  # fmt: skip
    the_ref(home).write_bytes(b"")

    again = Checkpoints(ws, home).list()

    assert [c.commit for c in again] == [c.commit for c in chain]


def test_a_mend_that_fails_leaves_the_torn_ref_rather_than_none(
    cp: Checkpoints, ws: Path, home: Path, monkeypatch
) -> None:
    # The torn file went before the tip was found: a failure after that left no ref,
    # which every later look read as "no checkpoints yet" with no error.
    from lathe.checkpoint.shadow import ShadowRepo
    from lathe.errors import LatheError

    (ws / "a").write_text("0\n")
    cp.before_turn(1)
    shell(ws, "echo 1 > a")
    cp.after_turn(1)
    the_ref(home).write_bytes(b"")
    real = ShadowRepo._git

    def failing(self, *args, **kwargs):
        if args and args[0] == "rev-list":
            raise LatheError("git rev-list failed")
        return real(self, *args, **kwargs)

    monkeypatch.setattr(ShadowRepo, "_git", failing)
    with pytest.raises(LatheError):
        Checkpoints(ws, home).list()
    assert the_ref(home).exists()
