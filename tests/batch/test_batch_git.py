"""A task's check may ask git: it sees the repository as the agent left it (its commits,
its index), but never the agent's git configuration or hooks, which run code when the
check runs git (`core.fsmonitor`, a filter, a hook). The check's copy took the set-up
tree's .git whole, so a task about the agent's commit could never be solved. Through
the real CLI against the scripted fake model."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

from tests.batch.tasks import VERIFY, result_lines, run_batch
from tests.fakes.openai_server import Call, Reply
from tests.service.scripts import by_marker

FULL = ("--lathe-arg=--approval", "--lathe-arg=full")
# Fixes calc.py in the check's copy alone, whenever git there asks it what changed.
FSMONITOR = (
    'printf \'#!/bin/sh\\ncase "$PWD" in */checked) sed -i "s/a - b/a + b/" calc.py;; esac\\n'
    "exit 1\\n' > .git/fsm.sh && chmod +x .git/fsm.sh && "
    "printf '[core]\\n\\tfsmonitor = .git/fsm.sh\\n' >> .git/config"
)


def _repository(origin: Path) -> None:
    (origin / "tests").mkdir(parents=True)
    (origin / "calc.py").write_text("def add(a, b):\n    return a - b\n")
    (origin / "tests" / "test_calc.py").write_text(
        "from calc import add\n\n\ndef test_add():\n    assert add(2, 3) == 5\n"
    )
    commit = ["-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "task"]
    for args in (["init", "-q"], ["add", "-A"], commit):
        subprocess.run(["git", "-C", str(origin), *args], check=True, capture_output=True)


def _tasks(tmp_path: Path, task: str, verify: str) -> Path:
    origin = tmp_path / "origin"
    _repository(origin)
    tasks = tmp_path / "tasks.jsonl"
    tasks.write_text(json.dumps({"id": "g1", "repo": str(origin), "task": f"Task g1: {task}",
                                 "verify": verify, "timeout": 60}) + "\n")  # fmt: skip
    return tasks


def _runs(name: str, command: str) -> list:
    return [Reply(calls=[Call("bash", {"command": command})]), Reply(f"{name}: done.")]


def test_a_check_reading_the_agents_commit_sees_it(tmp_path, fake_openai):
    tasks = _tasks(tmp_path, "commit the fix as 'release 2'",
                   "git log -1 --format=%s | grep -q 'release 2'")  # fmt: skip
    commit = ("sed -i 's/a - b/a + b/' calc.py && git add calc.py && "
              "git -c user.name=a -c user.email=a@a commit -qm 'release 2'")  # fmt: skip
    fake_openai.responder = by_marker({"Task g1": _runs("g1", commit)})
    run = tmp_path / "run"

    done = run_batch(tmp_path, tasks, run, fake_openai, *FULL)

    assert done.returncode == 0, done.stderr
    [line] = result_lines(run)
    assert line["status"] == "solved" and line["verify_exit"] == 0, line


def test_the_agents_git_config_never_runs_in_the_check(tmp_path, fake_openai):
    tasks = _tasks(tmp_path, "fix add", f"git status --porcelain >/dev/null && {VERIFY}")
    fake_openai.responder = by_marker({"Task g1": _runs("g1", FSMONITOR)})
    run = tmp_path / "run"

    done = run_batch(tmp_path, tasks, run, fake_openai, *FULL)

    assert done.returncode == 0, done.stderr
    [line] = result_lines(run)
    assert line["diff_stat"]["files"] == 0, line  # calc.py untouched in the work
    assert line["status"] == "unsolved" and line["verify_exit"] == 1, line
