"""`lathe run` with the task tool, end to end against the fake model: children work in
parallel on their own copies, their changes land as checkpoints of their own or come
back as a conflict, and each child's status says how it really ended (issue 17).

The fake server answers the parent and each child by what their requests contain: a
child's conversation opens with its brief, which names it."""

from __future__ import annotations

import json
import subprocess
import threading
from pathlib import Path
from typing import Any

from tests.e2e.test_calculator import lathe
from tests.fakes.openai_server import Call, Reply


def _project(tmp_path: Path) -> Path:
    ws = tmp_path / "ws"
    ws.mkdir()
    subprocess.run(["git", "init", "-q", "-b", "main"], cwd=ws, check=True)
    (ws / "a.py").write_text("A = 1\n")
    (ws / "b.py").write_text("B = 1\n")
    subprocess.run(["git", "add", "-A"], cwd=ws, check=True)
    subprocess.run(
        ["git", "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "-m", "x"],
        cwd=ws, check=True,
    )  # fmt: skip
    return ws


def _run(server, ws: Path, tmp_path: Path, *args: str) -> subprocess.CompletedProcess:
    return lathe(
        "run", "--json", "--model", "m", "--base-url", server.base_url, "-C", str(ws), *args,
        cwd=tmp_path,
        env_extra={"OPENAI_API_KEY": "sk-test", "LATHE_HOME": str(tmp_path / "home")},
    )  # fmt: skip


def _task(name: str, brief: str, **extra: Any) -> Call:
    return Call("task", {"description": name, "prompt": brief, **extra}, id=f"call_{name}")


def _edit(path: str, old: str, new: str) -> Call:
    return Call("edit", {"path": path, "old_string": old, "new_string": new})


def _first_user_text(body: dict[str, Any]) -> str:
    return next(m["content"] for m in body["messages"] if m["role"] == "user")


def _turn(body: dict[str, Any]) -> int:
    """How many replies this conversation has had so far."""
    return sum(1 for m in body["messages"] if m["role"] == "assistant")


class Script:
    """A responder: the parent's replies in order, each child's by the marker in its
    brief (a list of replies per child, one per turn)."""

    def __init__(self, parent: list[Reply], children: dict[str, list[Reply]]) -> None:
        self.parent = parent
        self.children = children
        self.lock = threading.Lock()

    def __call__(self, body: dict[str, Any]) -> Reply:
        opening = _first_user_text(body)
        for marker, replies in self.children.items():
            if marker in opening:
                turn = _turn(body)
                return replies[min(turn, len(replies) - 1)]
        return self.parent[min(_turn(body), len(self.parent) - 1)]


def _results(stdout: str) -> dict[str, dict[str, Any]]:
    """The task calls' outputs by call id, from the parent's own tool_finished events."""
    found = {}
    for line in stdout.splitlines():
        event = json.loads(line)
        if event["type"] == "tool_finished" and event["name"] == "task":
            found[event["call_id"]] = event
    return found


def _child_events(stdout: str) -> list[dict[str, Any]]:
    return [e for e in map(json.loads, stdout.splitlines()) if e["type"] == "child_event"]


def _checkpoint_labels(ws: Path, tmp_path: Path) -> list[str]:
    listed = lathe(
        "checkpoints", "list", "-C", str(ws), cwd=tmp_path,
        env_extra={"LATHE_HOME": str(tmp_path / "home")},
    )  # fmt: skip
    assert listed.returncode == 0, listed.stderr
    return [line.split("\t")[3] for line in listed.stdout.splitlines() if line.strip()]


def test_two_children_edit_different_files_in_parallel_and_both_changes_land(
    tmp_path, fake_openai
) -> None:
    ws = _project(tmp_path)
    both_started = threading.Barrier(2, timeout=20)

    def first_reply(path: str, old: str, new: str):
        def reply() -> Reply:
            both_started.wait()  # only passes if the two children run at the same time
            return Reply(calls=[_edit(path, old, new)])

        return reply

    replies = {"[child A]": first_reply("a.py", "A = 1", "A = 2"),
               "[child B]": first_reply("b.py", "B = 1", "B = 2")}  # fmt: skip
    script = Script(
        parent=[
            Reply(
                calls=[
                    _task("A", "[child A] set A to 2 in a.py"),
                    _task("B", "[child B] set B to 2 in b.py"),
                ]
            ),
            Reply("both done"),
        ],
        children={},
    )

    def responder(body: dict[str, Any]) -> Reply:
        opening = _first_user_text(body)
        for marker, first in replies.items():
            if marker in opening:
                return first() if _turn(body) == 0 else Reply(f"done {marker}")
        return script(body)

    fake_openai.responder = responder
    result = _run(fake_openai, ws, tmp_path, "split the work")

    assert result.returncode == 0, result.stderr[-3000:]
    assert (ws / "a.py").read_text() == "A = 2\n"
    assert (ws / "b.py").read_text() == "B = 2\n"
    outputs = _results(result.stdout)
    for call in ("call_A", "call_B"):
        assert outputs[call]["is_error"] is False, outputs[call]["output"]
        assert ": completed" in outputs[call]["output"]
        assert "Not verified" in outputs[call]["output"]  # said plainly to the parent
    labels = _checkpoint_labels(ws, tmp_path)
    assert sum("subagent" in label and ": A" in label for label in labels) == 1
    assert sum("subagent" in label and ": B" in label for label in labels) == 1
    children = {e["child_id"]: e["parent_call_id"] for e in _child_events(result.stdout)}
    assert sorted(children.values()) == ["call_A", "call_B"]
    headers = [
        json.loads(p.read_text().splitlines()[0])
        for p in (tmp_path / "home" / "sessions").rglob("*.jsonl")
    ]
    parent = next(h for h in headers if h.get("parent_call") is None)
    linked = {h["id"]: h["parent_call"] for h in headers if h.get("parent_call")}
    assert linked == children
    assert all(h["parent_session"] == parent["id"] for h in headers if h.get("parent_call"))
    assert not list((tmp_path / "home" / "worktrees").rglob("a.py"))  # cleaned up


def test_two_children_changing_the_same_line_one_lands_one_is_a_conflict(
    tmp_path, fake_openai
) -> None:
    ws = _project(tmp_path)
    fake_openai.responder = Script(
        parent=[
            Reply(calls=[_task("X", "[child X] set A to 10"), _task("Y", "[child Y] set A to 20")]),
            Reply("done"),
        ],
        children={
            "[child X]": [Reply(calls=[_edit("a.py", "A = 1", "A = 10")]), Reply("x done")],
            "[child Y]": [Reply(calls=[_edit("a.py", "A = 1", "A = 20")]), Reply("y done")],
        },
    )

    result = _run(fake_openai, ws, tmp_path, "race")

    assert result.returncode == 0, result.stderr[-3000:]
    outputs = _results(result.stdout)
    landed = [c for c, e in outputs.items() if "are applied to your workspace" in e["output"]]
    refused = [c for c, e in outputs.items() if "were NOT applied" in e["output"]]
    assert len(landed) == 1 and len(refused) == 1
    assert outputs[refused[0]]["is_error"] is True
    value = "10" if landed == ["call_X"] else "20"
    assert (ws / "a.py").read_text() == f"A = {value}\n"
    patch_line = next(
        line for line in outputs[refused[0]]["output"].splitlines() if ".patch" in line
    )
    patch_file = Path(patch_line.split("The patch is in ")[1].split(";")[0])
    assert "A = " in patch_file.read_text()


def test_a_child_out_of_turns_says_so_and_its_partial_change_is_kept(tmp_path, fake_openai) -> None:
    ws = _project(tmp_path)
    fake_openai.responder = Script(
        parent=[Reply(calls=[_task("slow", "[child S] change both files")]), Reply("ok")],
        children={
            "[child S]": [
                Reply(calls=[_edit("a.py", "A = 1", "A = 3")]),
                Reply(calls=[Call("read", {"path": "b.py"})]),  # then its turns run out
            ]
        },
    )

    result = _run(fake_openai, ws, tmp_path, "-c", "agents.max_turns=2", "go")

    assert result.returncode == 0, result.stderr[-3000:]
    (output,) = _results(result.stdout).values()
    assert ": out_of_budget" in output["output"] and output["is_error"] is True
    assert "a.py (+1 -1)" in output["output"]
    assert (ws / "a.py").read_text() == "A = 3\n"  # the partial change was not dropped


def test_the_depth_limit_and_the_read_only_explorer(tmp_path, fake_openai) -> None:
    ws = _project(tmp_path)
    fake_openai.responder = Script(
        parent=[
            Reply(
                calls=[
                    _task("look", "[child E] look around", agent="explore"),
                    _task("deep", "[child D] try to nest"),
                ]
            ),
            Reply("ok"),
        ],
        children={
            "[child E]": [Reply(calls=[_edit("a.py", "A = 1", "A = 9")]), Reply("saw it")],
            "[child D]": [Reply("nothing to nest")],
        },
    )

    result = _run(fake_openai, ws, tmp_path, "-c", "agents.max_depth=1", "explore")

    assert result.returncode == 0, result.stderr[-3000:]
    assert (ws / "a.py").read_text() == "A = 1\n"
    tools_of = {}
    for body in fake_openai.chat_bodies():
        opening = _first_user_text(body)
        names = sorted(t["function"]["name"] for t in body.get("tools", []))
        for marker in ("[child E]", "[child D]"):
            if marker in opening:
                tools_of[marker] = names
        if "[child" not in opening:
            tools_of["parent"] = names
    assert "task" in tools_of["parent"]
    assert "task" not in tools_of["[child D]"]  # max_depth=1: children start none
    assert "edit" in tools_of["[child D]"]
    assert not {"edit", "write", "bash", "task"} & set(tools_of["[child E]"])
    explorer = [e for e in _child_events(result.stdout) if e["parent_call_id"] == "call_look"]
    finished = [e["event"] for e in explorer if e["event"]["type"] == "tool_finished"]
    assert finished and finished[0]["is_error"] is True  # edit is no tool of the explorer
