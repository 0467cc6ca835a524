"""The user's own git settings, through `lathe run` against the fake model: a child's
folder ignores what the user's repository ignores (its `info/exclude`, its
`core.excludesFile`, the user's global one), and the user's diff settings do not stop a
child from starting while the workspace has uncommitted changes."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
from tests.e2e.test_calculator import lathe
from tests.fakes.openai_server import Call, Reply
from tests.subagents.test_task_tool import Script, _edit, _project, _results, _task


def _run(server, ws: Path, tmp_path: Path, home: Path | None = None) -> subprocess.CompletedProcess:
    env = {"OPENAI_API_KEY": "sk-test", "LATHE_HOME": str(tmp_path / "home")}
    if home is not None:
        env["HOME"] = str(home)
    return lathe(
        "run", "--json", "--model", "m", "--base-url", server.base_url, "-C", str(ws),
        "--approval", "full", "delegate", cwd=tmp_path, env_extra=env,
    )  # fmt: skip


def _child_edits_and_logs(server) -> None:
    """The parent starts one child, which edits a.py, adds to app.log and makes other.log."""
    logs = "echo run >> app.log; echo x > other.log"
    server.responder = Script(
        parent=[Reply(calls=[_task("c", "[child C] edit")]), Reply("ok")],
        children={"[child C]": [Reply(calls=[_edit("a.py", "A = 1", "A = 2"),
                                             Call("bash", {"command": logs})]),
                                Reply("done")]},
    )  # fmt: skip


@pytest.mark.parametrize("where", ["info/exclude", "core.excludesFile", "global excludesFile"])
def test_what_the_users_repository_ignores_the_child_leaves_behind(
    tmp_path, fake_openai, where
) -> None:
    # The child's clone read none of them: with `*.log` in .git/info/exclude its app.log
    # came back as a new file, clashed with the user's own, and the whole child (its
    # a.py too) was refused; with `*.log` in an excludes file its other.log came back.
    ws = _project(tmp_path)
    home = None
    if where == "info/exclude":
        (ws / ".git" / "info" / "exclude").write_text("*.log\n")
    elif where == "core.excludesFile":
        (tmp_path / "ignored").write_text("*.log\n")
        subprocess.run(["git", "config", "core.excludesFile", str(tmp_path / "ignored")],
                       cwd=ws, check=True)  # fmt: skip
    else:
        home = tmp_path / "user"
        home.mkdir()
        (home / ".gitconfig").write_text("[core]\n\texcludesfile = ~/.gitignore_global\n")
        (home / ".gitignore_global").write_text("*.log\n")
    (ws / "app.log").write_text("my own notes\n")
    _child_edits_and_logs(fake_openai)

    result = _run(fake_openai, ws, tmp_path, home)

    assert result.returncode == 0, result.stderr[-3000:]
    told = _results(result.stdout)["call_c"]
    assert not told["is_error"], told["output"]
    assert (ws / "a.py").read_text() == "A = 2\n"
    assert (ws / "app.log").read_text() == "my own notes\n"
    assert not (ws / "other.log").exists(), told["output"]
    assert "other.log" in told["output"]  # named as not brought back


@pytest.mark.parametrize(
    "setting",
    [
        "diff.noprefix=true",
        "color.ui=always",
        "diff.notebook.textconv=sed s/cells/CELLS/",
        "diff.external=echo",
    ],
)
def test_the_users_diff_settings_stop_no_child(tmp_path, fake_openai, setting) -> None:
    # The parent's uncommitted changes reached the child's folder through `git diff`
    # read with the user's settings: no a/ b/ prefixes, colours, a textconv's output or
    # an external tool's, and every child ended "could not run: git apply ... failed".
    ws = _project(tmp_path)
    (ws / ".gitattributes").write_text("*.ipynb diff=notebook\n")
    (ws / "nb.ipynb").write_text('{"cells": []}\n')
    git = ["git", "-c", "user.name=t", "-c", "user.email=t@t"]
    subprocess.run([*git, "add", "-A"], cwd=ws, check=True)
    subprocess.run([*git, "commit", "-qm", "nb"], cwd=ws, check=True)
    key, value = setting.split("=", 1)
    subprocess.run(["git", "config", key, value], cwd=ws, check=True)
    (ws / "nb.ipynb").write_text('{"cells": [1]}\n')  # the user's, not committed
    fake_openai.responder = Script(
        parent=[Reply(calls=[_task("c", "[child C] edit")]), Reply("ok")],
        # The child starts from the user's change: its edit finds `[1]`.
        children={"[child C]": [Reply(calls=[_edit("a.py", "A = 1", "A = 2"),
                                             _edit("nb.ipynb", "[1]", "[1, 2]")]),
                                Reply("done")]},
    )  # fmt: skip

    result = _run(fake_openai, ws, tmp_path)

    assert result.returncode == 0, result.stderr[-3000:]
    told = _results(result.stdout)["call_c"]
    assert not told["is_error"], told["output"]
    assert (ws / "a.py").read_text() == "A = 2\n"
    assert (ws / "nb.ipynb").read_text() == '{"cells": [1, 2]}\n', told["output"]
