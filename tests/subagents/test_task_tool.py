"""`lathe run` with the task tool, end to end against the fake model: children work in
parallel on their own copies, their changes land as checkpoints of their own or come
back as a conflict, and each child's status says how it really ended (issue 17).

The fake server answers the parent and each child by what their requests contain: a
child's conversation opens with its brief, which names it."""

from __future__ import annotations

import json
import os
import subprocess
import sys
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
    home = {"LATHE_HOME": str(tmp_path / "home")}
    tree = lathe("sessions", "show", parent["id"], cwd=tmp_path, env_extra=home)
    assert tree.returncode == 0, tree.stderr
    for child, call in children.items():
        assert f"{child}  subagent for call {call}  unverified" in tree.stdout
    child_id = next(iter(children))
    shown = lathe("sessions", "show", child_id, cwd=tmp_path, env_extra=home)
    assert f"Subagent of session {parent['id']} (its call {children[child_id]})" in shown.stdout


def test_three_children_at_once_two_land_as_checkpoints_and_a_conflict_is_reported(
    tmp_path, fake_openai
) -> None:
    ws = _project(tmp_path)
    fake_openai.responder = Script(
        parent=[
            Reply(
                calls=[
                    _task("X", "[child X] set A to 10"),
                    _task("Y", "[child Y] set A to 20"),
                    _task("Z", "[child Z] set B to 5"),
                ]
            ),
            Reply("done"),
        ],
        children={
            "[child X]": [Reply(calls=[_edit("a.py", "A = 1", "A = 10")]), Reply("x done")],
            "[child Y]": [Reply(calls=[_edit("a.py", "A = 1", "A = 20")]), Reply("y done")],
            "[child Z]": [Reply(calls=[_edit("b.py", "B = 1", "B = 5")]), Reply("z done")],
        },
    )

    result = _run(fake_openai, ws, tmp_path, "race")

    assert result.returncode == 0, result.stderr[-3000:]
    outputs = _results(result.stdout)
    landed = [c for c, e in outputs.items() if "are applied to your workspace" in e["output"]]
    refused = [c for c, e in outputs.items() if "were NOT applied" in e["output"]]
    assert sorted(landed + refused) == ["call_X", "call_Y", "call_Z"]
    assert "call_Z" in landed and len(refused) == 1 and refused[0] in ("call_X", "call_Y")
    assert outputs[refused[0]]["is_error"] is True
    assert all(": completed" in outputs[c]["output"] for c in outputs)  # honest either way
    value = "20" if refused == ["call_X"] else "10"
    assert (ws / "a.py").read_text() == f"A = {value}\n"
    assert (ws / "b.py").read_text() == "B = 5\n"
    labels = _checkpoint_labels(ws, tmp_path)
    for call in landed:
        mine = [x for x in labels if x.startswith("subagent ") and x.endswith(f": {call[5:]}")]
        assert len(mine) == 1, labels
    # The model is shown the patch itself: the file it is kept in is outside the
    # workspace, where neither read nor the sandbox's bash reaches.
    refusal = outputs[refused[0]]["output"]
    assert "-A = 1\n+A = " in refusal, refusal
    patch_line = next(line for line in refusal.splitlines() if ".patch" in line)
    patch_file = Path(patch_line.split("kept for the user in ")[1].split(")")[0])
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


def test_a_child_cannot_reach_the_parents_folder_even_past_the_path_checks(
    tmp_path, fake_openai
) -> None:
    ws = _project(tmp_path)
    target = ws / "escaped.txt"
    sneak = f"python3 -c \"open('{target}', 'w').write('x')\"; cat {ws / 'a.py'}; echo end"
    fake_openai.responder = Script(
        parent=[Reply(calls=[_task("sneak", "[child N] write outside")]), Reply("ok")],
        children={"[child N]": [Reply(calls=[Call("bash", {"command": sneak})]), Reply("done")]},
    )

    result = _run(fake_openai, ws, tmp_path, "go")

    assert result.returncode == 0, result.stderr[-3000:]
    assert not target.exists()
    bash = [
        e["event"] for e in _child_events(result.stdout)
        if e["event"]["type"] == "tool_finished" and e["event"]["name"] == "bash"
    ]  # fmt: skip
    assert "end" in bash[0]["output"]  # it ran, in a sandbox without the parent's folder
    assert "No such file or directory" in bash[0]["output"]


def test_ctrl_c_stops_every_child_and_each_keeps_what_it_changed(tmp_path, fake_openai) -> None:
    import os
    import signal
    import sys
    import time

    ws = _project(tmp_path)
    marker = f"lathe-child-{os.getpid()}-{time.monotonic_ns()}"
    sleeper = Call("bash", {"command": f"exec -a {marker} sleep 120", "timeout": 300})
    fake_openai.responder = Script(
        parent=[Reply(calls=[_task("one", "[child 1] edit a"), _task("two", "[child 2] edit b")])],
        children={
            "[child 1]": [Reply(calls=[_edit("a.py", "A = 1", "A = 5")]), Reply(calls=[sleeper])],
            "[child 2]": [Reply(calls=[_edit("b.py", "B = 1", "B = 5")]), Reply(calls=[sleeper])],
        },
    )
    env = {k: v for k, v in os.environ.items() if not k.startswith(("LATHE_", "OPENAI_"))}
    env.update(OPENAI_API_KEY="sk-test", LATHE_HOME=str(tmp_path / "home"))
    process = subprocess.Popen(
        [sys.executable, "-m", "lathe", "run", "--json", "--model", "m", "--base-url",
         fake_openai.base_url, "-C", str(ws), "go"],
        env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        deadline = time.monotonic() + 60
        while len(_processes_named(marker)) < 2 and time.monotonic() < deadline:
            time.sleep(0.05)
        assert len(_processes_named(marker)) == 2, "both children should be in their command"
        process.send_signal(signal.SIGINT)
        stdout, stderr = process.communicate(timeout=60)
    finally:
        process.kill()

    assert process.returncode == 130, stderr[-3000:]
    deadline = time.monotonic() + 10
    while _processes_named(marker) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert _processes_named(marker) == []
    assert (ws / "a.py").read_text() == "A = 1\n" and (ws / "b.py").read_text() == "B = 1\n"
    sessions = [
        [json.loads(line) for line in path.read_text().splitlines()]
        for path in (tmp_path / "home" / "sessions").rglob("*.jsonl")
    ]
    children = [lines for lines in sessions if lines[0].get("parent_call")]
    assert len(children) == 2
    for lines in children:
        ends = [e for e in lines if e.get("type") == "run_end"]
        assert ends and ends[-1]["status"] == "interrupted"
        patch = next((tmp_path / "home" / "patches").rglob(f"{lines[0]['id']}.patch"))
        assert "+A = 5" in patch.read_text() or "+B = 5" in patch.read_text()
        # The user is told where each child's work is (it was only in the patch file).
        told = [e["message"] for e in map(json.loads, stdout.splitlines())
                if e["type"] == "notice"]  # fmt: skip
        assert any(str(patch) in m and "git apply" in m for m in told), told
        assert ends[-1]["turns"] >= 2  # it had made its edit and started its command


def _processes_named(marker: str) -> list[int]:
    """Processes whose program name (argv[0], as `exec -a` sets it) is `marker`."""
    found = []
    for entry in Path("/proc").iterdir():
        try:
            name = (entry / "cmdline").read_bytes().split(b"\0")[0]
            if entry.name.isdigit() and name == marker.encode():
                found.append(int(entry.name))
        except OSError:
            continue
    return found


def test_once_the_childrens_token_budget_is_spent_no_new_child_starts(
    tmp_path, fake_openai
) -> None:
    ws = _project(tmp_path)
    fake_openai.responder = Script(
        parent=[
            Reply(calls=[_task("first", "[child F] look")]),
            Reply(calls=[_task("second", "[child G] look again")]),
            Reply("done"),
        ],
        children={"[child F]": [Reply("seen")], "[child G]": [Reply("seen too")]},
    )

    result = _run(fake_openai, ws, tmp_path, "-c", "agents.max_total_tokens=10", "go")

    assert result.returncode == 0, result.stderr[-3000:]
    outputs = _results(result.stdout)
    assert ": completed" in outputs["call_first"]["output"]
    assert outputs["call_second"]["is_error"] is True
    assert "agents.max_total_tokens" in outputs["call_second"]["output"]
    assert not any("[child G]" in _first_user_text(b) for b in fake_openai.chat_bodies())


def test_progress_indents_a_child_and_undo_reverts_its_change(tmp_path, fake_openai) -> None:
    ws = _project(tmp_path)
    fake_openai.responder = Script(
        parent=[Reply(calls=[_task("bump", "[child U] bump A")]), Reply("done")],
        children={"[child U]": [Reply(calls=[_edit("a.py", "A = 1", "A = 7")]), Reply("ok")]},
    )
    env = {"OPENAI_API_KEY": "sk-test", "LATHE_HOME": str(tmp_path / "home")}

    result = lathe(
        "run", "--model", "m", "--base-url", fake_openai.base_url, "-C", str(ws), "go",
        cwd=tmp_path, env_extra=env,
    )  # fmt: skip
    undone = lathe("undo", "-C", str(ws), cwd=tmp_path, env_extra=env)

    assert result.returncode == 0, result.stderr[-3000:]
    assert "    [bump] edit -> " in result.stderr
    assert "    [bump] unverified after 2 turns" in result.stderr
    assert undone.returncode == 0, undone.stderr
    assert (ws / "a.py").read_text() == "A = 1\n"


def test_a_child_reads_and_writes_the_projects_own_memory(tmp_path, fake_openai) -> None:
    # Keyed to its throwaway copy, a child saw none of the project's memory and its own
    # writes went to a file no later run read.
    ws = _project(tmp_path)
    fake_openai.enqueue(
        Reply(
            calls=[
                Call(
                    "memory",
                    {"action": "add", "scope": "project", "text": "PARENT-MEM tests: pytest -q"},
                )
            ]
        ),
        Reply("noted"),
    )
    assert _run(fake_openai, ws, tmp_path, "remember the tests").returncode == 0
    fake_openai.responder = Script(
        parent=[Reply(calls=[_task("noter", "CHILD-MARK: note the build")]), Reply("done")],
        children={"CHILD-MARK": [
            Reply(calls=[Call("memory", {"action": "add", "scope": "project",
                                         "text": "CHILD-MEM build uses make"})]),
            Reply("child done"),
        ]},
    )  # fmt: skip

    done = _run(fake_openai, ws, tmp_path, "delegate")

    assert done.returncode == 0, done.stderr
    child = next(b for b in fake_openai.chat_bodies() if "CHILD-MARK" in _first_user_text(b))
    assert "PARENT-MEM" in child["messages"][0]["content"]
    shown = lathe("memory", "show", "-C", str(ws), cwd=tmp_path,
                  env_extra={"LATHE_HOME": str(tmp_path / "home")})  # fmt: skip
    assert "CHILD-MEM build uses make" in shown.stdout, shown.stdout


def test_a_child_that_starts_its_own_child_when_every_slot_is_taken_does_not_hang(
    tmp_path, fake_openai
) -> None:
    # The child held the only slot while it waited for one for its own child: the run
    # hung for good (by default too, once as many children as slots each nested one).
    ws = _project(tmp_path)
    fake_openai.responder = Script(
        parent=[Reply(calls=[_task("outer", "[child O] delegate")]), Reply("all done")],
        children={
            "[child O]": [Reply(calls=[_task("inner", "[child I] change b")]), Reply("O done")],
            "[child I]": [Reply(calls=[_edit("b.py", "B = 1", "B = 2")]), Reply("I done")],
        },
    )

    result = _run(fake_openai, ws, tmp_path, "-c", "agents.max_parallel=1", "--timeout", "60s",
                  "delegate twice")  # fmt: skip

    assert result.returncode == 0, result.stderr[-3000:]
    assert (ws / "b.py").read_text() == "B = 2\n"
    # The inner child's changes land in the outer one's folder, where no checkpoint is
    # taken: the outer child is not told `lathe undo` reverts them.
    outer = [b for b in fake_openai.chat_bodies() if "[child O]" in _first_user_text(b)]
    told = [m["content"] for m in outer[-1]["messages"] if m["role"] == "tool"]
    assert "applied to your workspace" in told[-1] and "lathe undo" not in told[-1]


def test_a_second_ctrl_c_while_children_stop_loses_none_of_their_work(
    tmp_path, fake_openai
) -> None:
    # The second Ctrl-C cut the wait for each child's patch, and its worktree was
    # removed while the patch was still being written: the child's files were gone.
    import os
    import signal
    import sys
    import time

    from tests.fakes.openai_server import Hang

    ws = _project(tmp_path)
    for n in range(3000):  # a patch that takes a moment to compute
        folder = ws / f"d{n % 30}"
        folder.mkdir(exist_ok=True)
        (folder / f"f{n}.txt").write_text(f"{n}\n" * 50)
    subprocess.run(["git", "add", "-A"], cwd=ws, check=True)
    subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "more"],
                   cwd=ws, check=True)  # fmt: skip
    names = ["one", "two", "three", "four"]
    fake_openai.responder = Script(
        parent=[Reply(calls=[_task(name, f"[child {name}] write") for name in names])],
        children={
            f"[child {name}]": [
                Reply(calls=[Call("write", {"path": f"{name}.txt", "content": f"work {name}\n"})]),
                Hang(60),
            ]
            for name in names
        },
    )
    env = {k: v for k, v in os.environ.items() if not k.startswith(("LATHE_", "OPENAI_"))}
    env.update(OPENAI_API_KEY="sk-test", LATHE_HOME=str(tmp_path / "home"))
    process = subprocess.Popen(
        [sys.executable, "-m", "lathe", "run", "--approval", "full", "--model", "m",
         "--base-url", fake_openai.base_url, "-C", str(ws), "go"],
        env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip

    def hanging() -> int:
        return sum(1 for body in fake_openai.chat_bodies() if _turn(body) == 1
                   and "[child" in _first_user_text(body))  # fmt: skip

    try:
        deadline = time.monotonic() + 90
        while hanging() < len(names) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert hanging() == len(names), "every child should be waiting on the model"
        time.sleep(0.5)
        process.send_signal(signal.SIGINT)
        time.sleep(0.05)
        process.send_signal(signal.SIGINT)
        process.communicate(timeout=60)
    finally:
        process.kill()

    home = tmp_path / "home"
    patches = list((home / "patches").rglob("*.patch")) if (home / "patches").exists() else []
    for name in names:
        in_patches = any(f"+work {name}" in p.read_text(errors="replace") for p in patches)
        in_worktrees = any((home / "worktrees").rglob(f"{name}.txt"))
        assert in_patches or in_worktrees, f"child {name}'s work is gone"


def test_the_runs_budgets_count_its_children_and_bound_them(tmp_path, fake_openai) -> None:
    # Each child had the whole --max-cost to itself, --max-tokens bound none of them, and
    # the run ended 0 reporting only the parent's tokens and cost.
    ws = _project(tmp_path)
    big = {"prompt_tokens": 400_000, "completion_tokens": 1000, "total_tokens": 401_000}
    busy = [Reply(calls=[Call("bash", {"command": "true"})], usage=big)] * 3
    fake_openai.responder = Script(
        parent=[Reply(calls=[_task("a", "[child a] work"), _task("b", "[child b] work")]),
                Reply("all done")],
        children={"[child a]": [*busy, Reply("a done", usage=big)],
                  "[child b]": [*busy, Reply("b done", usage=big)]},
    )  # fmt: skip
    priced = ["-c", "models.m.provider=openai", "-c", "models.m.input_price=1.0",
              "-c", "models.m.output_price=2.0"]  # fmt: skip

    result = _run(fake_openai, ws, tmp_path, *priced, "--approval", "full", "--max-tokens",
                  "100k", "split the work")  # fmt: skip

    assert result.returncode == 1, result.stderr[-3000:]
    finished = [e for e in map(json.loads, result.stdout.splitlines())
                if e["type"] == "run_finished"][-1]  # fmt: skip
    assert finished["status"] == "out_of_budget"
    child_requests = [b for b in fake_openai.chat_bodies() if "[child" in _first_user_text(b)]
    # The run's budget is shared: once one child's reply took it over the cap, no agent
    # of the run asks again (the other child too, unless its request was already out).
    assert 1 <= len(child_requests) <= 2
    assert finished["usage"]["input_tokens"] >= 400_000 * len(child_requests)
    assert finished["cost_usd"] >= 0.4 * len(child_requests)
    assert len(fake_openai.chat_bodies()) == 1 + len(child_requests)  # the parent asked no more


def test_a_file_a_child_writes_at_an_ignored_path_is_named_not_dropped_silently(
    tmp_path, fake_openai
) -> None:
    # The child said it wrote build/out.log; its result listed only a.py, and the file
    # was gone with the child's folder, with no word to anyone.
    ws = _project(tmp_path)
    (ws / ".gitignore").write_text("build/\n__pycache__/\n")
    fake_openai.responder = Script(
        parent=[Reply(calls=[_task("w", "[child W] write the log")]), Reply("ok")],
        children={
            "[child W]": [
                Reply(calls=[
                    _edit("a.py", "A = 1", "A = 2"),
                    Call("write", {"path": "build/out.log", "content": "the report\n"}),
                    Call("bash", {"command": "mkdir -p __pycache__ && touch __pycache__/a.pyc"}),
                ]),
                Reply("wrote both"),
            ]
        },
    )  # fmt: skip

    result = _run(fake_openai, ws, tmp_path, "--approval", "full", "delegate")

    assert result.returncode == 0, result.stderr[-3000:]
    assert (ws / "a.py").read_text() == "A = 2\n"
    told = _results(result.stdout)["call_w"]["output"]
    assert "build/out.log" in told and "not brought back" in told
    assert "a.pyc" not in told  # caches are no one's work


def test_a_child_sees_the_submodules_and_is_told_its_changes_there_stay_behind(
    tmp_path, fake_openai
) -> None:
    # Inside the child's copy a submodule was an empty folder, and what it wrote there
    # vanished without a word.
    sub = tmp_path / "subrepo"
    sub.mkdir()
    subprocess.run(["git", "init", "-q"], cwd=sub, check=True)
    (sub / "x.txt").write_text("sub content\n")
    git = ["git", "-c", "user.name=t", "-c", "user.email=t@t", "-c", "protocol.file.allow=always"]
    subprocess.run([*git, "add", "-A"], cwd=sub, check=True)
    subprocess.run([*git, "commit", "-qm", "s"], cwd=sub, check=True)
    ws = _project(tmp_path)
    subprocess.run([*git, "submodule", "add", "-q", str(sub), "vendor"], cwd=ws, check=True)
    subprocess.run([*git, "commit", "-qm", "with a submodule"], cwd=ws, check=True)
    command = "cat vendor/x.txt > seen.txt; echo new > vendor/x.txt"
    fake_openai.responder = Script(
        parent=[Reply(calls=[_task("s", "[child S] look in vendor")]), Reply("ok")],
        children={"[child S]": [Reply(calls=[Call("bash", {"command": command})]),
                                Reply("done")]},
    )  # fmt: skip

    result = _run(fake_openai, ws, tmp_path, "--approval", "full", "delegate")

    assert result.returncode == 0, result.stderr[-3000:]
    assert (ws / "seen.txt").read_text() == "sub content\n"  # the child could read it
    assert (ws / "vendor" / "x.txt").read_text() == "sub content\n"  # not written through
    told = _results(result.stdout)["call_s"]["output"]
    assert "vendor/x.txt" in told and "not brought back" in told


def test_a_childs_events_begin_with_its_run_started(tmp_path, fake_openai) -> None:
    # The child's events began at turn_started: a reader never learnt its task, model,
    # workspace or session from a start event.
    ws = _project(tmp_path)
    fake_openai.responder = Script(
        parent=[Reply(calls=[_task("a", "[child a] look")]), Reply("all done")],
        children={"[child a]": [Reply("looked")]},
    )
    result = _run(fake_openai, ws, tmp_path, "--approval", "full", "look around")
    assert result.returncode == 0, result.stderr[-3000:]
    inner = [e["event"] for e in map(json.loads, result.stdout.splitlines())
             if e["type"] == "child_event"]  # fmt: skip
    assert inner[0]["type"] == "run_started" and "[child a] look" in inner[0]["task"]
    assert inner[0]["session_id"] and inner[-1]["type"] == "run_finished"


def test_a_childs_own_token_cap_and_the_runs_budget_each_hold(tmp_path, fake_openai) -> None:
    # agents.max_tokens was judged on the whole run's spend (a second child stopped at
    # once, having used nothing), and in place of --max-tokens when larger (the run
    # went on past its budget).
    ws = _project(tmp_path)
    some = {"prompt_tokens": 40, "completion_tokens": 10, "total_tokens": 50}
    fake_openai.responder = Script(
        parent=[Reply(calls=[_task("a", "[child a] look")], usage=some),
                Reply(calls=[_task("b", "[child b] look")], usage=some),
                Reply("done", usage=some)],
        children={"[child a]": [Reply("a seen", usage=some)],
                  "[child b]": [Reply("b seen", usage=some)]},
    )  # fmt: skip
    result = _run(fake_openai, ws, tmp_path, "-c", "agents.max_tokens=60", "go")
    assert result.returncode == 0, result.stderr[-3000:]
    outputs = _results(result.stdout)
    assert ": completed" in outputs["call_a"]["output"], outputs["call_a"]
    assert ": completed" in outputs["call_b"]["output"], outputs["call_b"]

    busy = [Reply(calls=[Call("bash", {"command": "true"})], usage=some)] * 8
    fake_openai.responder = Script(
        parent=[Reply(calls=[_task("c", "[child c] work")], usage=some), Reply("done")],
        children={"[child c]": [*busy, Reply("c done", usage=some)]},
    )  # fmt: skip
    before = len(fake_openai.chat_bodies())
    result = _run(fake_openai, ws, tmp_path, "--approval", "full", "--max-tokens", "200",
                  "-c", "agents.max_tokens=100000", "split the work")  # fmt: skip
    asked = len(fake_openai.chat_bodies()) - before
    assert asked <= 5, f"{asked} requests for a 200-token run of 50-token replies"


_PRICED = ["-c", "models.m.provider=openai", "-c", "models.m.input_price=1.0",
           "-c", "models.m.output_price=2.0"]  # fmt: skip


def _with_an_unpriced_child(tmp_path, fake_openai) -> Path:
    """A project whose `cheap` profile runs a model with no prices, and a script where
    the parent hands it one task."""
    ws = _project(tmp_path)
    agents = ws / ".lathe" / "agents"
    agents.mkdir(parents=True)
    (agents / "cheap.md").write_text(
        "---\ndescription: a cheaper model\nmodel: unpriced\n---\nWork.\n"
    )
    fake_openai.responder = Script(
        parent=[Reply(calls=[_task("a", "[child a] work", agent="cheap")]), Reply("done")],
        children={"[child a]": [Reply("a done")]},
    )
    return ws


def test_a_profile_model_with_no_prices_under_a_cost_budget_is_refused(tmp_path, fake_openai):
    # Its cost was unknown, so --max-cost never judged the child: 2.6M tokens spent.
    ws = _with_an_unpriced_child(tmp_path, fake_openai)
    result = _run(fake_openai, ws, tmp_path, *_PRICED, "--max-cost", "0.50", "go")
    outputs = _results(result.stdout)
    assert outputs["call_a"]["is_error"] is True, outputs["call_a"]
    assert "prices" in outputs["call_a"]["output"]
    assert not any("[child a]" in _first_user_text(b) for b in fake_openai.chat_bodies())


def test_a_child_of_unknown_cost_makes_the_runs_cost_unknown_not_lower(tmp_path, fake_openai):
    # Without a cost budget such a child may run, and its cost was added as $0: the run
    # reported a known cost that left the child out.
    ws = _with_an_unpriced_child(tmp_path, fake_openai)
    result = _run(fake_openai, ws, tmp_path, *_PRICED, "go")
    assert result.returncode == 0, result.stderr[-3000:]
    assert any("[child a]" in _first_user_text(b) for b in fake_openai.chat_bodies())
    finished = json.loads(result.stdout.splitlines()[-1])
    assert finished["type"] == "run_finished" and finished["cost_usd"] is None


def test_sigterm_while_a_childs_worktree_is_made_leaves_no_copy_behind(
    tmp_path, fake_openai
) -> None:
    # The copy went on in its thread after the cancel, and nothing removed it: a full
    # copy of the workspace (its .env too) stayed under LATHE_HOME/worktrees.
    import signal
    import time

    ws = _project(tmp_path)
    for index in range(4000):  # untracked: each is copied
        (ws / f"data_{index}.txt").write_text("x" * 100)
    fake_openai.responder = Script(
        parent=[Reply(calls=[_task("a", "[child a] look")]), Reply("done")],
        children={"[child a]": [Reply("seen")]},
    )
    env = {k: v for k, v in os.environ.items() if not k.startswith(("LATHE_", "OPENAI_"))}
    env.update(OPENAI_API_KEY="sk-test", LATHE_HOME=str(tmp_path / "home"))
    run = subprocess.Popen(
        [sys.executable, "-m", "lathe", "run", "--model", "m", "--base-url",
         fake_openai.base_url, "-C", str(ws), "go"],
        env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    trees = tmp_path / "home" / "worktrees"
    deadline = time.monotonic() + 60
    while not [d for d in trees.glob("*/*") if d.is_dir() and any(d.glob("data_1*"))]:
        assert time.monotonic() < deadline and run.poll() is None, "no worktree was made"
        time.sleep(0.005)
    run.send_signal(signal.SIGTERM)
    _, err = run.communicate(timeout=60)

    assert run.returncode == 143, err
    assert [d for d in trees.glob("*/*") if d.is_dir()] == []


def test_a_child_that_only_reads_is_not_said_to_have_left_files_behind(tmp_path, fake_openai):
    # Every child was told it made `.lathe/tmp/.gitignore` (lathe's own spill folder)
    # and should make it again in the parent's workspace.
    ws = _project(tmp_path)
    fake_openai.responder = Script(
        parent=[Reply(calls=[_task("a", "[child a] read a.py")]), Reply("done")],
        children={"[child a]": [Reply(calls=[Call("read", {"path": "a.py"})]), Reply("seen")]},
    )
    result = _run(fake_openai, ws, tmp_path, "go")
    assert result.returncode == 0, result.stderr[-3000:]
    output = _results(result.stdout)["call_a"]["output"]
    assert "not brought back" not in output and ".lathe/tmp" not in output, output
