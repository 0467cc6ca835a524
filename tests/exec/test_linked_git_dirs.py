"""git in a workspace whose `.git` is a file, with the real CLI and the real sandboxes:
reproduced on landed main, in a linked worktree (`git worktree add`) or a submodule
every git command failed inside the sandbox (`fatal: not a git repository`), since the
git dir that file names, and a worktree's common one, were not there.
"""

from __future__ import annotations

import pytest
from tests.exec.test_sandbox_keeps_lathes_own_out import (
    SANDBOXES,
    _git,
    _repository,
    _tool_outputs,
)
from tests.sandboxes import needs

from lathe.exec.bwrap import check_bubblewrap
from lathe.exec.view import sandbox_view

pytestmark = needs(check_bubblewrap(), "bubblewrap")


@pytest.mark.parametrize("sandbox", SANDBOXES)
def test_git_works_in_a_linked_worktree_and_its_git_dir_stays_read_only(
    tmp_path, fake_openai, sandbox
):
    main = _repository(tmp_path / "main")
    _git("worktree", "add", "-q", str(tmp_path / "linked"), cwd=main)
    linked = tmp_path / "linked"
    (linked / "a.txt").write_text("changed\n")

    seen = _tool_outputs(
        fake_openai, tmp_path, linked, {},
        "git status --short; git log --oneline; git diff --stat; "
        f"touch {main}/.git/probe {main}/.git/worktrees/linked/probe; echo rc=$?",
        args=sandbox,
    )  # fmt: skip

    assert "not a git repository" not in seen, seen
    assert "first commit" in seen and "a.txt" in seen
    assert not (main / ".git" / "probe").exists()
    assert not (main / ".git" / "worktrees" / "linked" / "probe").exists()


def test_git_works_in_a_submodule(tmp_path, fake_openai):
    upstream = _repository(tmp_path / "upstream")
    outer = _repository(tmp_path / "outer")
    _git("-c", "protocol.file.allow=always", "submodule", "add", "-q", str(upstream), "sub",
         cwd=outer)  # fmt: skip
    sub = outer / "sub"
    assert (sub / ".git").is_file()

    seen = _tool_outputs(
        fake_openai, tmp_path, sub, {},
        f"git log --oneline; touch {outer}/.git/modules/sub/probe; echo rc=$?",
    )  # fmt: skip

    assert "not a git repository" not in seen, seen
    assert "first commit" in seen
    assert not (outer / ".git" / "modules" / "sub" / "probe").exists()


def test_the_git_dirs_a_dot_git_file_names_are_read_only_unless_git_is_hidden(tmp_path):
    main = _repository(tmp_path / "main")
    _git("worktree", "add", "-q", str(tmp_path / "linked"), cwd=main)
    linked = tmp_path / "linked"

    shown = sandbox_view(linked, linked, network=False).read_only
    hidden_git = sandbox_view(linked, linked, network=False, hide_git=True)

    assert main / ".git" in shown and main / ".git" / "worktrees" / "linked" in shown
    assert not any(p.is_relative_to(main) for p in hidden_git.read_only)
    assert linked / ".git" in hidden_git.hidden
