"""Undo and restore meeting files they cannot change, through the real CLI against the
fake server. Before, a file that could not be replaced (`chattr +i`) stopped an undo
half done — other files already reverted or deleted, no undo recorded — with "git
checkout-index failed ... if the store is damaged, move it aside"; a folder that could
not be written gave a PermissionError traceback from `restore._delete`.

A folder root cannot write is an immutable one (`chattr +i`); a user's is a read-only
one (`chmod a-w`): each test makes what its user can.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
from tests.checkpoint.helpers import lathe, shell
from tests.fakes.openai_server import Call, Reply

from lathe.checkpoint import Checkpoints
from lathe.errors import UsageError

ROOT = os.geteuid() == 0


def _chattr(flag: str, path: Path) -> None:
    if shutil.which("chattr") is None:
        pytest.skip("chattr is not installed")
    done = subprocess.run(["chattr", flag, str(path)], capture_output=True, check=False)
    if done.returncode != 0:
        pytest.skip(f"this file system takes no attributes: {done.stderr!r}")


@contextlib.contextmanager
def unwritable_folder(folder: Path) -> Iterator[None]:
    if ROOT:
        _chattr("+i", folder)
    else:
        folder.chmod(0o555)
    try:
        yield
    finally:
        if ROOT:
            subprocess.run(["chattr", "-i", str(folder)], check=False)
        folder.chmod(0o755)


@contextlib.contextmanager
def attribute(flag: str, path: Path) -> Iterator[None]:
    if not ROOT:
        pytest.skip("only root sets file attributes")
    _chattr(f"+{flag}", path)
    try:
        yield
    finally:
        subprocess.run(["chattr", f"-{flag}", str(path)], check=False)


def agent_changes(server, ws: Path, tmp_path: Path) -> None:
    (ws / "d").mkdir()
    (ws / "a.txt").write_text("a0\n")
    (ws / "ro.txt").write_text("r0\n")
    (ws / "d" / "old.txt").write_text("o0\n")
    script = (
        "echo a1 > a.txt; echo r1 > ro.txt; echo n > d/new.txt; echo o1 > d/old.txt; echo z > z.txt"
    )
    server.enqueue(Reply(calls=[Call("bash", {"command": script})]), Reply("Done."))
    done = lathe(
        tmp_path, "run", "--model", "m", "--base-url", server.base_url, "--approval", "full",
        "-C", str(ws), "change them",
    )  # fmt: skip
    assert done.returncode == 0, done.stderr


def state(ws: Path) -> dict[str, str]:
    """The workspace's files, but lathe's own scratch folder."""
    found = {p.relative_to(ws).as_posix(): p for p in sorted(ws.rglob("*")) if p.is_file()}
    return {name: p.read_text() for name, p in found.items() if not name.startswith(".lathe/")}


AFTER_TURN = {
    "a.txt": "a1\n",
    "ro.txt": "r1\n",
    "d/new.txt": "n\n",
    "d/old.txt": "o1\n",
    "z.txt": "z\n",
}


def assert_plainly_refused(done: subprocess.CompletedProcess, *named: str) -> None:
    assert done.returncode == 2, done
    assert "Traceback" not in done.stderr and "aside" not in done.stderr, done.stderr
    assert "nothing was changed" in done.stderr, done.stderr
    for path in named:
        assert path in done.stderr, done.stderr


@pytest.mark.parametrize("command", [("undo",), ("checkpoints", "restore", "1")])
def test_a_folder_that_cannot_be_written_stops_it_before_anything_changes(
    tmp_path, fake_openai, command
):
    ws = tmp_path / "ws"
    ws.mkdir()
    agent_changes(fake_openai, ws, tmp_path)

    with unwritable_folder(ws / "d"):
        refused = lathe(tmp_path, *command, "-C", str(ws))
        assert_plainly_refused(refused, "d/new.txt", "d/old.txt")
        assert "folder d" in refused.stderr, refused.stderr
        assert state(ws) == AFTER_TURN
        listed = lathe(tmp_path, "checkpoints", "list", "-C", str(ws)).stdout
        assert "undo" not in listed and "restore of" not in listed, listed

    again = lathe(tmp_path, *command, "-C", str(ws))  # once it can be written
    assert again.returncode == 0, again.stderr
    assert state(ws) == {"a.txt": "a0\n", "ro.txt": "r0\n", "d/old.txt": "o0\n"}


def test_an_immutable_file_stops_an_undo_before_anything_changes(tmp_path, fake_openai):
    ws = tmp_path / "ws"
    ws.mkdir()
    agent_changes(fake_openai, ws, tmp_path)

    with attribute("i", ws / "ro.txt"):
        refused = lathe(tmp_path, "undo", "-C", str(ws))
        assert_plainly_refused(refused, "ro.txt")
        assert "immutable" in refused.stderr
        assert state(ws) == AFTER_TURN


def test_a_file_found_unchangeable_only_on_writing_leaves_the_rest_done_and_recorded(
    tmp_path, fake_openai
):
    # An append-only file passes every check made beforehand; replacing it fails.
    ws = tmp_path / "ws"
    ws.mkdir()
    agent_changes(fake_openai, ws, tmp_path)
    (ws / "d" / "old.txt").write_text("mine\n")

    with attribute("a", ws / "ro.txt"):
        partial = lathe(tmp_path, "undo", "-C", str(ws))
        assert partial.returncode == 1, partial
        assert "Traceback" not in partial.stderr and "aside" not in partial.stderr
        assert "ro.txt: " in partial.stderr and "Operation not permitted" in partial.stderr
        assert "`lathe undo` finishes" in partial.stderr, partial.stderr
        assert "kept as yours: d/old.txt" in partial.stderr, partial.stderr
        assert state(ws) == {"a.txt": "a0\n", "ro.txt": "r1\n", "d/old.txt": "mine\n"}
        listed = lathe(tmp_path, "checkpoints", "list", "-C", str(ws)).stdout
        assert "undo of turn 1" in listed, listed

    finished = lathe(tmp_path, "undo", "-C", str(ws))  # the same undo, the user's file kept
    assert "ro.txt" in finished.stdout and "d/old.txt" in finished.stderr, finished
    assert state(ws) == {"a.txt": "a0\n", "ro.txt": "r0\n", "d/old.txt": "mine\n"}


def test_the_start_over_between_attempts_refuses_before_changing_anything(
    cp: Checkpoints, ws: Path
) -> None:
    (ws / "d").mkdir()
    (ws / "d" / "f.txt").write_text("0\n")
    start = cp.snapshot("before the run")
    cp.before_turn(1)
    shell(ws, "echo 1 > d/f.txt; echo 1 > top.txt")
    cp.after_turn(1)

    with unwritable_folder(ws / "d"), pytest.raises(UsageError, match=r"d/f\.txt"):
        cp.start_over(start, 2)
    assert (ws / "top.txt").exists()
