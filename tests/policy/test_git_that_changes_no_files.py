"""git is judged by where it works only when it changes or discards work-tree files.

`cd .. && git add -A` (the workspace a subfolder of the repository) was refused as a
change of files outside the workspace: add, commit, branch and tag write only inside the
repository's .git, never a file of the work tree.
"""

from __future__ import annotations

import pytest
from tests.policy.full_mode import HOME, decide_in_full

WORKSPACE = HOME / "repo" / "project"  # a subfolder of the repository at ~/repo


def _decide(command: str):
    return decide_in_full(command, WORKSPACE)


@pytest.mark.parametrize(
    "command",
    [
        "cd .. && git add -A",
        "cd .. && git commit -m x",
        "git -C .. add -A && git -C .. commit -m 'a change'",
        "cd .. && git branch topic && git tag v1",
        "cd ~ && git add -A",
    ],
)
def test_git_that_changes_no_work_tree_file_passes(command: str) -> None:
    decision = _decide(command)
    assert decision.action == "allow", decision.reason


@pytest.mark.parametrize(
    "command",
    [
        "cd .. && git checkout -- .",
        "cd .. && git clean -fdx",
        "cd ~ && git stash",
        "cd .. && git rm -r docs",
        "cd $X && git reset --hard",
        "GIT_DIR=~/.dotfiles git add -A",  # a repository named outside is written
        "git --git-dir=/etc/x.git commit -m x",
    ],
)
def test_git_that_changes_work_tree_files_outside_is_still_refused(command: str) -> None:
    decision = _decide(command)
    assert decision.action == "deny", decision.reason
