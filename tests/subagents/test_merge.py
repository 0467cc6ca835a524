"""Two children changing one file: their changes merge three ways against what each
started from, so edits to different lines both land (the second had been refused as a
conflict, and the `git apply` it suggested failed too); edits to the same lines leave
the workspace as it was and the notice gives a command that applies them, with conflict
markers to resolve."""

from __future__ import annotations

import json
import shlex
import subprocess
import threading
import time
from pathlib import Path
from typing import Any

from tests.e2e.test_calculator import lathe
from tests.fakes.openai_server import Reply
from tests.subagents.test_task_tool import (
    _checkpoint_labels,
    _edit,
    _first_user_text,
    _results,
    _run,
    _task,
    _turn,
)

CLASS = "class C:\n    def f(self):\n        return 1\n\n    def g(self):\n        return 2\n"


def _workspace(tmp_path: Path, name: str, text: str) -> Path:
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / name).write_text(text)
    git = ["git", "-c", "user.name=t", "-c", "user.email=t@t"]
    subprocess.run([*git, "init", "-q", "-b", "main"], cwd=ws, check=True)
    subprocess.run([*git, "add", "-A"], cwd=ws, check=True)
    subprocess.run([*git, "commit", "-qm", "x"], cwd=ws, check=True)
    return ws


def _wait_for(path: Path, text: str) -> None:
    """Until `path` holds `text` (the other child's change has landed), or a minute."""
    deadline = time.monotonic() + 60
    while text not in path.read_text() and time.monotonic() < deadline:
        time.sleep(0.02)


def _one_after_the_other(ws: Path, path: str, first: tuple[str, str], second: tuple[str, str]):
    """A responder: the parent starts children A and B in one reply; each makes its edit
    of `path` once both have started (so both start from the same state), and B ends
    only once A's change is in the workspace (so B's is the one that merges)."""
    both_started = threading.Barrier(2, timeout=60)

    def responder(body: dict[str, Any]) -> Reply:
        opening, turn = _first_user_text(body), _turn(body)
        for marker, (old, new) in (("[child A]", first), ("[child B]", second)):
            if marker not in opening:
                continue
            if turn == 0:
                both_started.wait()
                return Reply(calls=[_edit(path, old, new)])
            if marker == "[child B]":
                _wait_for(ws / path, first[1])
            return Reply(f"done {marker}")
        if turn == 0:
            return Reply(
                calls=[_task("A", "[child A] change it"), _task("B", "[child B] change it")]
            )
        return Reply("both done")

    return responder


def _notices(stdout: str) -> list[str]:
    return [e["message"] for e in map(json.loads, stdout.splitlines()) if e["type"] == "notice"]


def test_edits_to_different_lines_of_one_file_both_land_and_undo_reverts_the_second(
    tmp_path, fake_openai
) -> None:
    ws = _workspace(tmp_path, "m.py", CLASS)
    fake_openai.responder = _one_after_the_other(
        ws, "m.py", ("return 1", "return 10"), ("return 2", "return 20")
    )

    result = _run(fake_openai, ws, tmp_path, "fix f and g")

    assert result.returncode == 0, result.stderr[-3000:]
    both = CLASS.replace("return 1", "return 10").replace("return 2", "return 20")
    assert (ws / "m.py").read_text() == both
    outputs = _results(result.stdout)
    for call in ("call_A", "call_B"):
        assert outputs[call]["is_error"] is False, outputs[call]["output"]
        assert "are applied to your workspace" in outputs[call]["output"]
    assert not [m for m in _notices(result.stdout) if "not applied" in m]
    labels = _checkpoint_labels(ws, tmp_path)
    assert [x for x in labels if x.startswith("subagent ") and x.endswith(": B")], labels
    undone = lathe("undo", "-C", str(ws), cwd=tmp_path,
                   env_extra={"LATHE_HOME": str(tmp_path / "home")})  # fmt: skip
    assert undone.returncode == 0, undone.stderr
    assert (ws / "m.py").read_text() == CLASS.replace("return 1", "return 10")


def test_edits_to_the_same_line_leave_the_workspace_alone_and_the_notice_command_works(
    tmp_path, fake_openai
) -> None:
    ws = _workspace(tmp_path, "a.txt", "line1\nline2\nline3\n")
    fake_openai.responder = _one_after_the_other(
        ws, "a.txt", ("line2", "line2-A"), ("line2", "line2-B")
    )

    result = _run(fake_openai, ws, tmp_path, "change line2 twice")

    assert result.returncode == 0, result.stderr[-3000:]
    assert (ws / "a.txt").read_text() == "line1\nline2-A\nline3\n"  # no markers, no half
    refused = _results(result.stdout)["call_B"]
    assert refused["is_error"] is True and "were NOT applied" in refused["output"]
    assert "a.txt" in refused["output"]
    (notice,) = [m for m in _notices(result.stdout) if "subagent 'B'" in m]
    assert "\n" not in notice and "a.txt" in notice, notice
    kept = Path(notice.split("kept in ")[1].split(":")[0].split(";")[0].strip())
    assert "+line2-B" in kept.read_text()
    command = notice.split("`")[1]
    applied = subprocess.run(shlex.split(command), cwd=ws, capture_output=True, text=True)
    assert applied.returncode == 0, (command, applied.stderr)
    merged = (ws / "a.txt").read_text()
    assert "line2-A" in merged and "line2-B" in merged and "<<<<<<<" in merged, merged
    assert merged.startswith("line1\n") and merged.endswith("line3\n")


def test_a_merge_lands_whole_or_not_at_all_and_a_file_not_text_is_never_marked(
    tmp_path,
) -> None:
    from lathe.subagents.worktree import apply_patch, child_changes, create_worktree

    ws = _workspace(tmp_path, "a.txt", "one\ntwo\nthree\n")
    (ws / "c.bin").write_bytes(b"\0base")
    home = tmp_path / "home"
    first, second = create_worktree(ws, home, "first"), create_worktree(ws, home, "second")
    (first.path / "a.txt").write_text("ONE\ntwo\nthree\n")
    (first.path / "c.bin").write_bytes(b"\0first")
    (second.path / "a.txt").write_text("one\ntwo\nTHREE\n")
    (second.path / "new.txt").write_text("new\n")
    landed = apply_patch(ws, child_changes(first).patch, home / "first.patch", first)
    merged = apply_patch(ws, child_changes(second).patch, home / "second.patch", second)

    assert landed.applied and merged.applied, merged.reason
    assert (ws / "a.txt").read_text() == "ONE\ntwo\nTHREE\n"
    assert (ws / "new.txt").read_text() == "new\n"

    third = create_worktree(ws, home, "third")
    (third.path / "c.bin").write_bytes(b"\0third")
    (third.path / "a.txt").write_text("ONE\ntwo\nTHREE\nfour\n")
    (ws / "c.bin").write_bytes(b"\0mine")
    clash = apply_patch(ws, child_changes(third).patch, home / "third.patch", third)

    assert not clash.applied and clash.clashes == ("c.bin",)
    assert "c.bin" in clash.reason and "cannot be merged" in clash.reason
    assert (ws / "a.txt").read_text() == "ONE\ntwo\nTHREE\n"  # the clean part waits too
    assert clash.marked is not None and b"c.bin" not in clash.marked.read_bytes()


def test_the_notice_command_works_in_a_workspace_below_a_repositorys_top(
    tmp_path, fake_openai
) -> None:
    # Run there, `git apply PATCH` took the patch's paths from the repository's top,
    # skipped them all as outside the folder and said nothing: exit 0, nothing applied.
    top = _workspace(tmp_path, "README", "top\n")
    ws = top / "sub"
    ws.mkdir()
    (ws / "a.txt").write_text("line1\nline2\nline3\n")
    git = ["git", "-c", "user.name=t", "-c", "user.email=t@t"]
    subprocess.run([*git, "add", "-A"], cwd=top, check=True)
    subprocess.run([*git, "commit", "-qm", "sub"], cwd=top, check=True)
    fake_openai.responder = _one_after_the_other(
        ws, "a.txt", ("line2", "line2-A"), ("line2", "line2-B")
    )

    result = _run(fake_openai, ws, tmp_path, "change line2 twice")

    assert result.returncode == 0, result.stderr[-3000:]
    (notice,) = [m for m in _notices(result.stdout) if "subagent 'B'" in m]
    command = notice.split("`")[1]
    applied = subprocess.run(shlex.split(command), cwd=ws, capture_output=True, text=True)
    assert applied.returncode == 0, (command, applied.stderr)
    assert "line2-B" in (ws / "a.txt").read_text(), command
