"""Three children at once against three one after another, on the same scripted work.

`lathe run` against the fake OpenAI-compatible server (tests/fakes/openai_server.py):
the parent hands out three subtasks, either as three task calls in one reply (they run
in parallel) or one per reply (one after another). Each child edits its own file, runs
a one-second command, and says it is done; its change comes back as a checkpoint. What
is printed is the median wall time of the whole run in each shape, and the cost of one
child beyond its command (its worktree, session, sandbox and merge).

Usage: python bench/subagents.py [--runs N]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from tests.fakes.openai_server import Call, FakeOpenAIServer, Reply  # noqa: E402

CHILDREN = ("one", "two", "three")
COMMAND_S = 1.0


def _workspace(root: Path) -> Path:
    ws = root / "ws"
    ws.mkdir()
    for name in CHILDREN:
        (ws / f"{name}.py").write_text("VALUE = 1\n")
    git = ["git", "-c", "user.name=b", "-c", "user.email=b@b"]
    subprocess.run([*git, "init", "-q"], cwd=ws, check=True)
    subprocess.run([*git, "add", "-A"], cwd=ws, check=True)
    subprocess.run([*git, "commit", "-q", "-m", "start"], cwd=ws, check=True)
    return ws


def _task(name: str) -> Call:
    brief = f"[child {name}] set VALUE to 2 in {name}.py, then check it"
    return Call("task", {"description": name, "prompt": brief}, id=f"call_{name}")


def _responder(parallel: bool):
    parent = (
        [Reply(calls=[_task(n) for n in CHILDREN]), Reply("all done")]
        if parallel
        else [*(Reply(calls=[_task(n)]) for n in CHILDREN), Reply("all done")]
    )

    def answer(body: dict[str, Any]) -> Reply:
        opening = next(m["content"] for m in body["messages"] if m["role"] == "user")
        turn = sum(1 for m in body["messages"] if m["role"] == "assistant")
        for name in CHILDREN:
            if f"[child {name}]" in opening:
                edit = {"path": f"{name}.py", "old_string": "VALUE = 1", "new_string": "VALUE = 2"}
                script = [
                    Reply(calls=[Call("edit", edit)]),
                    Reply(calls=[Call("bash", {"command": f"sleep {COMMAND_S}"})]),
                    Reply(f"{name} done"),
                ]
                return script[min(turn, len(script) - 1)]
        return parent[min(turn, len(parent) - 1)]

    return answer


def one_run(server: FakeOpenAIServer, parallel: bool) -> float:
    with tempfile.TemporaryDirectory() as tmp:
        ws = _workspace(Path(tmp))
        server.responder = _responder(parallel)
        env = {k: v for k, v in os.environ.items() if not k.startswith(("LATHE_", "OPENAI_"))}
        env.update(OPENAI_API_KEY="sk-bench", LATHE_HOME=str(Path(tmp) / "home"))
        argv = [sys.executable, "-m", "lathe", "run", "--model", "m", "--base-url",
                server.base_url, "-C", str(ws), "split the work"]  # fmt: skip
        started = time.perf_counter()
        done = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=300)
        wall = time.perf_counter() - started
        if done.returncode != 0:
            raise SystemExit(f"lathe run failed ({done.returncode}): {done.stderr[-2000:]}")
        changed = [(ws / f"{n}.py").read_text() for n in CHILDREN]
        if changed != ["VALUE = 2\n"] * len(CHILDREN):
            raise SystemExit(f"a child's change did not land: {changed}")
        return wall


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    walls: dict[bool, list[float]] = {True: [], False: []}
    with FakeOpenAIServer() as server:
        for _ in range(args.runs):  # interleaved, so load changes hit both shapes alike
            for parallel in (True, False):
                walls[parallel].append(one_run(server, parallel))
    parallel, sequential = (statistics.median(walls[p]) for p in (True, False))
    count = len(CHILDREN)
    print(f"{count} children, each an edit and a {COMMAND_S:.0f} s command: median of {args.runs}")
    print(f"  in parallel (one reply)         {parallel:6.2f} s")
    print(f"  one after another (3 replies)   {sequential:6.2f} s")
    per_child = (sequential - parallel) / (count - 1)
    print(f"  a child's time, command included: about {per_child:.2f} s")


if __name__ == "__main__":
    main()
