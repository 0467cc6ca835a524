"""The user's own repository is never touched: not .git, index, branches, stash or hooks."""

from __future__ import annotations

from pathlib import Path

import pytest
from tests.checkpoint.helpers import dot_git, files, shell, user_git, write

from lathe.checkpoint import Checkpoints


@pytest.fixture
def user_repo(ws: Path) -> Path:
    """A repository mid-work: commits, a branch, a stash, staged and unstaged changes."""
    user_git(ws, "init", "--quiet", "--initial-branch=main")
    write(ws, ".gitignore", "*.log\n")
    write(ws, "tracked.txt", "v1\n")
    write(ws, "other.txt", "o1\n")
    user_git(ws, "add", ".")
    user_git(ws, "commit", "--quiet", "-m", "first")
    user_git(ws, "branch", "feature")
    write(ws, "tracked.txt", "stashed\n")
    user_git(ws, "stash", "--quiet")
    write(ws, "staged.txt", "staged\n")
    write(ws, "other.txt", "o2 staged\n")
    user_git(ws, "add", "staged.txt", "other.txt")
    write(ws, "other.txt", "o3 unstaged\n")
    write(ws, "untracked.txt", "u\n")
    write(ws, "debug.log", "ignored\n")
    # A hook that would leave a mark if any commit ran in this repository.
    hook = ws / ".git" / "hooks" / "pre-commit"
    hook.write_text(f"#!/bin/sh\ntouch {ws.parent / 'HOOK-RAN'}\n")
    hook.chmod(0o755)
    return ws


def repo_view(ws: Path) -> dict[str, str]:
    return {
        "head": user_git(ws, "rev-parse", "HEAD"),
        "symbolic": user_git(ws, "symbolic-ref", "HEAD"),
        "refs": user_git(ws, "for-each-ref"),
        "stash": user_git(ws, "stash", "list"),
        "staged": user_git(ws, "diff", "--cached"),
        "unstaged": user_git(ws, "diff"),
        "status": user_git(ws, "status", "--porcelain=v2", "--branch", "--ignored"),
        "index": user_git(ws, "ls-files", "--stage"),
        "config": user_git(ws, "config", "--local", "--list"),
    }


def test_snapshot_undo_and_restore_leave_the_users_repo_alone(
    user_repo: Path, cp: Checkpoints, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    ws = user_repo
    view = repo_view(ws)
    raw = dot_git(ws)
    # Variables a git hook or the user's shell could leave set, pointing at their repo,
    # and a global config whose hooks, signing and filters must not run in our commands.
    hooks = tmp_path / "global-hooks"
    hooks.mkdir()
    (hooks / "pre-commit").write_text(f"#!/bin/sh\ntouch {tmp_path / 'GLOBAL-HOOK-RAN'}\n")
    (hooks / "pre-commit").chmod(0o755)
    global_config = tmp_path / "gitconfig"
    global_config.write_text(
        f"[core]\n\thooksPath = {hooks}\n[commit]\n\tgpgSign = true\n"
        '[filter "boom"]\n\tclean = false\n\trequired = true\n'
    )
    write(ws, ".gitattributes", "*.txt filter=boom\n")
    user_git(ws, "add", ".gitattributes")
    view, raw = repo_view(ws), dot_git(ws)
    monkeypatch.setenv("GIT_DIR", str(ws / ".git"))
    monkeypatch.setenv("GIT_INDEX_FILE", str(ws / ".git" / "index"))
    monkeypatch.setenv("GIT_WORK_TREE", str(ws))
    monkeypatch.setenv("GIT_CONFIG_GLOBAL", str(global_config))

    cp.before_turn(1)
    shell(ws, "echo agent > tracked.txt; rm untracked.txt; echo new > new.txt")
    cp.after_turn(1)
    assert dot_git(ws) == raw
    undone = cp.undo()
    cp.restore(undone.backup.n)
    cp.undo()
    cp.restore(1)  # the oldest

    assert dot_git(ws) == raw
    monkeypatch.delenv("GIT_DIR")
    monkeypatch.delenv("GIT_INDEX_FILE")
    monkeypatch.delenv("GIT_WORK_TREE")
    assert repo_view(ws) == view
    assert not (tmp_path / "HOOK-RAN").exists()
    assert not (tmp_path / "GLOBAL-HOOK-RAN").exists()
    assert (ws / "untracked.txt").read_text() == "u\n"
    assert (ws / "tracked.txt").read_text() == "v1\n"


def test_undo_in_a_repo_with_staged_changes(user_repo: Path, cp: Checkpoints) -> None:
    ws = user_repo
    before_files = files(ws)
    view, raw = repo_view(ws), dot_git(ws)

    cp.before_turn(1)
    shell(ws, "echo agent > staged.txt; echo agent > other.txt; rm tracked.txt; echo x > x.log")
    cp.after_turn(1)
    report = cp.undo()

    assert report.restored == ["other.txt", "staged.txt"]
    assert report.recreated == ["tracked.txt"]
    assert report.kept == [] and report.deleted == []
    assert files(ws) == {**before_files, "x.log": b"x\n"}  # ignored: left in place
    assert dot_git(ws) == raw
    (ws / "x.log").unlink()  # the agent's ignored file, which undo rightly left alone
    assert repo_view(ws) == view


def test_the_repos_info_exclude_is_honoured(user_repo: Path, cp: Checkpoints) -> None:
    ws = user_repo
    (ws / ".git" / "info").mkdir(exist_ok=True)
    (ws / ".git" / "info" / "exclude").write_text("scratch/\n")
    write(ws, "scratch/notes", "n\n")

    first = cp.snapshot("first")
    write(ws, "scratch/more", "m\n")
    second = cp.snapshot("second")

    assert second.commit == first.commit  # nothing recorded under scratch/


def test_a_workspace_in_a_subdirectory_of_a_repo(user_repo: Path, home: Path) -> None:
    sub = user_repo / "pkg"
    write(user_repo, "pkg/mod.py", "v1\n")
    raw = dot_git(user_repo)
    cp = Checkpoints(sub, home)

    cp.before_turn(1)
    shell(sub, "echo v2 > mod.py; echo n > new.py")
    cp.after_turn(1)
    cp.undo()

    assert files(sub) == {"mod.py": b"v1\n"}
    assert dot_git(user_repo) == raw
