"""A child whose folder git cannot take whole, through `lathe run` against the fake
model: a path git refuses costs none of the child's other changes, and changes lathe
cannot read back at all stay in the child's folder, which the user is told of, whether
the child ended or was stopped. Both had
ended "the subagent could not run ... Usage: 0 turns", the folder removed and no patch
saved: the child's whole work lost."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from tests.fakes.openai_server import Call, Hang, Reply
from tests.subagents.test_task_tool import Script, _edit, _project, _results, _run, _task
from tests.subagents.test_what_a_child_leaves import waiting_children


def _child_folders(tmp_path: Path) -> list[Path]:
    return [p for p in (tmp_path / "home" / "worktrees").glob("*/*") if p.is_dir()]


def _notices(stdout: str) -> list[str]:
    return [e["message"] for e in map(json.loads, stdout.splitlines()) if e["type"] == "notice"]


def test_a_path_git_refuses_costs_none_of_the_childs_other_changes(tmp_path, fake_openai) -> None:
    # `git add --all` stopped at GIT~1/n.txt (an invalid path to git): nothing was
    # staged, the result said the child "could not run", and its a.py and new.py went
    # with its folder.
    ws = _project(tmp_path)
    refused = 'mkdir -p "GIT~1" && echo x > "GIT~1/n.txt"'
    fake_openai.responder = Script(
        parent=[Reply(calls=[_task("g", "[child G] edit")]), Reply("ok")],
        children={"[child G]": [Reply(calls=[_edit("a.py", "A = 1", "A = 2"),
                                             Call("write", {"path": "new.py",
                                                            "content": "N = 1\n"}),
                                             Call("bash", {"command": refused})]),
                                Reply("done")]},
    )  # fmt: skip

    result = _run(fake_openai, ws, tmp_path, "--approval", "full", "delegate")

    assert result.returncode == 0, result.stderr[-3000:]
    told = _results(result.stdout)["call_g"]
    output = told["output"]
    assert (ws / "a.py").read_text() == "A = 2\n", output
    assert (ws / "new.py").read_text() == "N = 1\n", output
    assert ": completed" in output.splitlines()[0], output
    assert "could not run" not in output and "Usage: 2 turns" in output, output
    assert "GIT~1/n.txt" in output, output  # named as not brought back
    assert not _child_folders(tmp_path)


def test_changes_lathe_cannot_read_back_stay_in_the_childs_folder(tmp_path, fake_openai) -> None:
    # The child broke its own repository's index: nothing can be staged. Its folder
    # was removed all the same ("the worktree itself is broken: nothing more to save").
    ws = _project(tmp_path)
    fake_openai.responder = Script(
        parent=[Reply(calls=[_task("b", "[child B] edit")]), Reply("ok")],
        children={"[child B]": [Reply(calls=[_edit("a.py", "A = 1", "A = 2"),
                                             Call("bash", {"command": "echo x > .git/index"})]),
                                Reply("done")]},
    )  # fmt: skip

    result = _run(fake_openai, ws, tmp_path, "--approval", "full", "delegate")

    assert result.returncode == 0, result.stderr[-3000:]
    output = _results(result.stdout)["call_b"]["output"]
    assert (ws / "a.py").read_text() == "A = 1\n", output  # nothing landed
    [folder] = _child_folders(tmp_path)
    assert (folder / "a.py").read_text() == "A = 2\n"  # the work is still there
    assert "could not run" not in output and "Usage: 2 turns" in output, output
    assert str(folder) in output, output
    [notice] = [n for n in _notices(result.stdout) if str(folder) in n]
    assert "\n" not in notice, notice


def test_a_stopped_childs_changes_lathe_cannot_read_back_stay_in_its_folder(
    tmp_path, fake_openai
) -> None:
    # Stopped, the child's changes are kept as a patch; when they could not be read
    # back, its folder went all the same.
    ws = _project(tmp_path)
    fake_openai.responder = Script(
        parent=[Reply(calls=[_task("s", "[child S] edit")])],
        children={"[child S]": [Reply(calls=[_edit("a.py", "A = 1", "A = 2"),
                                             Call("bash", {"command": "echo x > .git/index"})]),
                                Hang(120)]},
    )  # fmt: skip
    env = {k: v for k, v in os.environ.items() if not k.startswith(("LATHE_", "OPENAI_"))}
    env.update(OPENAI_API_KEY="sk-test", LATHE_HOME=str(tmp_path / "home"),
               LATHE_CONFIG=os.devnull)  # fmt: skip
    process = subprocess.Popen(
        [sys.executable, "-m", "lathe", "run", "--json", "--model", "m", "--base-url",
         fake_openai.base_url, "-C", str(ws), "--approval", "full", "go"],
        env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        deadline = time.monotonic() + 60
        while waiting_children(fake_openai) < 1 and time.monotonic() < deadline:
            time.sleep(0.05)
        assert waiting_children(fake_openai) == 1
        process.send_signal(signal.SIGTERM)
        stdout, stderr = process.communicate(timeout=60)
    finally:
        process.kill()

    [folder] = _child_folders(tmp_path)
    assert (folder / "a.py").read_text() == "A = 2\n", stderr[-3000:]
    assert [n for n in _notices(stdout) if str(folder) in n], stdout[-3000:]
