"""Where git works, for the guard: a git command that changes files is judged in its own
folder (after `cd`, `env -C`), its `-C` folders, and the work tree and repository that
`--work-tree`, `--git-dir`, GIT_WORK_TREE and GIT_DIR name. `cd ~ && git clean -fdx`
removed files in `--approval full` while `git -C ~ clean -fdx` was refused.

The workspace is /home/dev/project inside the home /home/dev. No command here is run.
"""

from __future__ import annotations

import pytest
from tests.policy.full_mode import decide_in_full as _decide


@pytest.mark.parametrize(
    "command",
    [
        "cd ~ && git clean -fdx",
        "cd ~ && git reset --hard",
        "cd ~ && git checkout -- .",
        "cd /etc; git checkout .",
        "if true; then cd ~; fi; git clean -fdx",
        "GIT_WORK_TREE=/home/dev git clean -fdx",
        "GIT_WORK_TREE=~ git reset --hard",
        "GIT_DIR=/home/dev/.git git clean -fdx",
        "env -C /home/dev git clean -fdx",
        "env GIT_WORK_TREE=/home/dev git clean -fdx",
        "export GIT_WORK_TREE=~; git clean -fdx",
        "git -C ~ clean -fdx",
        "git --work-tree=/home/dev reset --hard",
    ],
)
def test_git_is_judged_where_it_works(command: str) -> None:
    decision = _decide(command)
    assert decision.action == "deny", decision.reason
    assert "/home/dev" in decision.reason or "/etc" in decision.reason


@pytest.mark.parametrize(
    "command",
    ["cd $X && git clean -fdx", "git -C $X reset --hard", "GIT_WORK_TREE=$W git clean -fd",
     "cd $X; git checkout -- ."],
)  # fmt: skip
def test_git_discarding_work_in_a_folder_only_known_at_run_time_is_refused(command: str) -> None:
    decision = _decide(command)
    assert decision.action == "deny", decision.reason
    assert "only known at run time" in decision.reason


@pytest.mark.parametrize(
    "command",
    [
        "git clean -fdx",
        "git reset --hard",
        "cd src && git checkout -- .",
        "git -C /tmp/clone reset --hard",
        "cd /tmp && git clone https://example.com/x.git",
        "GIT_DIR=.git git status",
        "cd ~ && git status",
        "cd $X && git log",
        "cd $X && git commit -m x",
    ],
)
def test_git_in_the_workspace_or_only_reading_passes(command: str) -> None:
    decision = _decide(command)
    assert decision.action == "allow", decision.reason
