"""Ordinary project scripts still run in `--approval full`.

Judging every folder the shell may be in made a folder only run time knows refuse any
`rm` there, which refused the most common opening of a shell script, `cd "$(dirname
"$0")"`, and loops like `for d in */; do (cd "$d" && rm -f *.o); done`. Now: in a
script file `$0` and BASH_SOURCE name the script, so `dirname "$0"` is a known folder;
a non-recursive `rm` in an unknown folder asks (which full mode lets run); and a script
on disk is judged as before for a folder only run time knows — it can only add a deny
where the folder is known to be dangerous. A recursive delete of a relative path in an
unknown folder on the command line is still refused: its worst case is the home folder.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from lathe.policy.command import analyze
from lathe.policy.gate import Mode, Policy
from lathe.policy.rules import RuleSet


def _folders(tmp_path: Path) -> tuple[Path, Path]:
    home, workspace = tmp_path / "home", tmp_path / "home" / "project"
    workspace.mkdir(parents=True)
    (home / "Documents").mkdir()
    return workspace, home


def _decide(command: str, workspace: Path, home: Path):
    policy = Policy(Mode.FULL, RuleSet.from_strings(), workspace, home, sandboxed=False)
    return policy.decide("bash", {"command": command})


BUILD = '#!/bin/bash\ncd "$(dirname "$0")"; rm -rf dist\nmake\n'


@pytest.mark.parametrize("run", ["bash build.sh", "./build.sh", "sh ./build.sh", "source build.sh"])
def test_a_script_that_starts_in_its_own_folder_runs(tmp_path: Path, run: str) -> None:
    workspace, home = _folders(tmp_path)
    (workspace / "build.sh").write_text(BUILD)
    decision = _decide(run, workspace, home)
    assert decision.action == "allow", decision.reason


@pytest.mark.parametrize(
    "body",
    [
        'cd "$(dirname "${BASH_SOURCE[0]}")" && rm -rf dist',
        'cd "$(dirname "$BASH_SOURCE")" || exit 1\nrm -rf build dist',
        'for d in */; do (cd "$d" && rm -rf build); done',  # judged as before c170ae2
        'cd "$OUT_DIR" && rm -rf *',
    ],
)
def test_ordinary_script_bodies_run(tmp_path: Path, body: str) -> None:
    workspace, home = _folders(tmp_path)
    (workspace / "x.sh").write_text(body + "\n")
    decision = _decide("bash x.sh", workspace, home)
    assert decision.action == "allow", decision.reason


def test_dirname_of_the_script_is_where_it_lies(tmp_path: Path) -> None:
    # The script lies in ~, so its own folder is the home folder: refused.
    workspace, home = _folders(tmp_path)
    (home / "clean.sh").write_text('cd "$(dirname "$0")"; rm -rf *\n')
    decision = _decide(f"bash {home}/clean.sh", workspace, home)
    assert decision.action == "deny", decision.reason
    assert "home directory" in decision.reason


def test_a_script_on_disk_that_may_be_in_the_home_folder_is_refused(tmp_path: Path) -> None:
    workspace, home = _folders(tmp_path)
    (workspace / "x.sh").write_text("if [ -d ~/Documents ]; then cd ~; fi; rm -rf * .ssh\n")
    decision = _decide("bash x.sh", workspace, home)
    assert decision.action == "deny", decision.reason


@pytest.mark.parametrize(
    "command",
    [
        'cd "$(dirname "$0")" && rm -f out.txt',
        'for d in */; do (cd "$d" && rm -f *.o); done',
        "cd $X && rm -f .bashrc",
    ],
)
def test_a_plain_rm_in_a_folder_only_run_time_knows_asks(tmp_path: Path, command: str) -> None:
    workspace, home = _folders(tmp_path)
    analysis = analyze(command, workspace=workspace, home=home, environ={})
    assert analysis.decision == "ask", analysis.reasons
    assert _decide(command, workspace, home).action == "allow"  # full mode: an ask is a yes


@pytest.mark.parametrize(
    "command",
    [
        "cd $X; rm -rf *",
        'cd "$(dirname "$0")" && rm -rf ./*',
        "echo 'cd \"$1\"; rm -rf *' > y.sh; bash y.sh",  # written by this command line
        "if [ -d ~/Documents ]; then cd ~; fi; rm -rf * .ssh",
    ],
)
def test_a_recursive_delete_where_the_folder_may_be_home_is_still_refused(
    tmp_path: Path, command: str
) -> None:
    workspace, home = _folders(tmp_path)
    decision = _decide(command, workspace, home)
    assert decision.action == "deny", decision.reason


def test_git_in_an_unknown_folder_of_a_script_on_disk_is_judged_as_before(
    tmp_path: Path,
) -> None:
    workspace, home = _folders(tmp_path)
    (workspace / "reset.sh").write_text('for d in */; do (cd "$d" && git checkout -- .); done\n')
    assert _decide("bash reset.sh", workspace, home).action == "allow"
    (workspace / "home.sh").write_text("cd ~ && git clean -fdx\n")
    assert _decide("bash home.sh", workspace, home).action == "deny"
