"""A child's worktree holds what the parent sees, lives outside the user's repository,
and its changes come back whole or not at all (issue 17, item 4), with real git."""

from __future__ import annotations

import subprocess
import threading
from pathlib import Path

import pytest

from lathe.subagents.worktree import (
    apply_patch,
    child_changes,
    create_worktree,
    remove_worktree,
)


def git(cwd: Path, *args: str) -> str:
    return subprocess.run(
        ["git", "-c", "user.name=t", "-c", "user.email=t@t", *args],
        cwd=cwd, check=True, capture_output=True, text=True,
    ).stdout  # fmt: skip


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    root = tmp_path / "repo"
    root.mkdir()
    git(root, "init", "-q", "-b", "main")
    (root / "app.py").write_text("def f():\n    return 1\n")
    (root / "gone.txt").write_text("to delete\n")
    (root / ".gitignore").write_text("build/\n")
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "first")
    return root


def _repository_state(root: Path) -> tuple[str, str, list[str]]:
    refs = git(root, "for-each-ref")
    config = (root / ".git" / "config").read_text()
    return refs, config, sorted(p.name for p in (root / ".git").iterdir())


def test_the_child_sees_head_plus_the_parents_uncommitted_and_untracked_files(
    repo: Path, tmp_path: Path
) -> None:
    (repo / "app.py").write_text("def f():\n    return 2\n")  # changed, not committed
    (repo / "gone.txt").unlink()
    (repo / "new.py").write_text("NEW = 1\n")  # untracked
    (repo / "build").mkdir()
    (repo / "build" / "out.bin").write_text("ignored\n")
    before = _repository_state(repo)

    tree = create_worktree(repo, tmp_path / "home", "child-1")

    assert tree.path.is_relative_to(tmp_path / "home") and not tree.path.is_relative_to(repo)
    assert (tree.path / "app.py").read_text() == "def f():\n    return 2\n"
    assert (tree.path / "new.py").read_text() == "NEW = 1\n"
    assert not (tree.path / "gone.txt").exists()
    assert not (tree.path / "build").exists()
    assert child_changes(tree).patch == b""  # the parent's state is the base, not a change
    assert _repository_state(repo) == before  # nothing written into the user's .git


def test_the_childs_changes_come_back_as_one_patch(repo: Path, tmp_path: Path) -> None:
    tree = create_worktree(repo, tmp_path / "home", "child-1")
    (tree.path / "app.py").write_text("def f():\n    return 3\n")
    (tree.path / "added.txt").write_text("a\nb\n")
    (tree.path / "gone.txt").unlink()
    (tree.path / "logo.bin").write_bytes(bytes(range(256)))

    stats = {s.path: (s.added, s.deleted) for s in child_changes(tree).files}
    outcome = apply_patch(repo, child_changes(tree).patch, tmp_path / "patches" / "child-1.patch")

    assert stats == {
        "app.py": (1, 1), "added.txt": (2, 0), "gone.txt": (0, 1), "logo.bin": (None, None),
    }  # fmt: skip
    assert outcome.applied, outcome.reason
    assert (repo / "app.py").read_text() == "def f():\n    return 3\n"
    assert (repo / "added.txt").read_text() == "a\nb\n"
    assert not (repo / "gone.txt").exists()
    assert (repo / "logo.bin").read_bytes() == bytes(range(256))
    assert git(repo, "status", "--porcelain", "--", "app.py").startswith(" M")  # not staged
    remove_worktree(tree)
    assert not tree.path.exists()


def test_a_patch_that_no_longer_applies_is_kept_and_changes_nothing(
    repo: Path, tmp_path: Path
) -> None:
    first = create_worktree(repo, tmp_path / "home", "first")
    second = create_worktree(repo, tmp_path / "home", "second")
    (first.path / "app.py").write_text("def f():\n    return 10\n")
    (first.path / "other.txt").write_text("from the first\n")
    (second.path / "app.py").write_text("def f():\n    return 20\n")
    (second.path / "side.txt").write_text("from the second\n")

    landed = apply_patch(repo, child_changes(first).patch, tmp_path / "p" / "first.patch")
    conflict = apply_patch(repo, child_changes(second).patch, tmp_path / "p" / "second.patch")

    assert landed.applied and not conflict.applied
    assert "app.py" in conflict.reason
    assert (repo / "app.py").read_text() == "def f():\n    return 10\n"
    assert not (repo / "side.txt").exists()  # all or nothing: the clean part stayed out too
    assert b"return 20" in conflict.patch_file.read_bytes()


def test_worktrees_created_at_once_are_each_whole_and_apart(repo: Path, tmp_path: Path) -> None:
    (repo / "app.py").write_text("def f():\n    return 5\n")
    trees, errors = [], []

    def make(n: int) -> None:
        try:
            trees.append(create_worktree(repo, tmp_path / "home", f"child-{n}"))
        except Exception as exc:  # reported below
            errors.append(exc)

    threads = [threading.Thread(target=make, args=(n,)) for n in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()

    assert errors == []
    assert len({t.path for t in trees}) == 4
    for tree in trees:
        assert (tree.path / "app.py").read_text() == "def f():\n    return 5\n"
        assert child_changes(tree).patch == b""


def test_a_folder_without_git_gets_a_copy_and_its_changes_back(tmp_path: Path) -> None:
    plain = tmp_path / "plain"
    (plain / "src").mkdir(parents=True)
    (plain / "src" / "m.py").write_text("X = 1\n")
    (plain / ".gitignore").write_text("*.log\n")  # no repository: nothing is ignored

    tree = create_worktree(plain, tmp_path / "home", "child")
    (tree.path / "src" / "m.py").write_text("X = 2\n")
    (tree.path / "run.log").write_text("kept\n")
    outcome = apply_patch(plain, child_changes(tree).patch, tmp_path / "child.patch")

    assert outcome.applied, outcome.reason
    assert (plain / "src" / "m.py").read_text() == "X = 2\n"
    assert (plain / "run.log").read_text() == "kept\n"
    assert not (plain / ".git").exists()


def test_a_name_in_use_is_refused(repo: Path, tmp_path: Path) -> None:
    create_worktree(repo, tmp_path / "home", "same")
    with pytest.raises(Exception, match="already exists"):
        create_worktree(repo, tmp_path / "home", "same")


def test_a_nested_repository_and_the_users_global_ignores(
    repo: Path, tmp_path: Path, monkeypatch
) -> None:
    nested = repo / "vendor" / "lib"
    nested.mkdir(parents=True)
    git(nested, "init", "-q")
    (nested / "lib.py").write_text("LIB = 1\n")
    (repo / ".envrc_local").write_text("export TOKEN=x\n")
    config = tmp_path / "xdg" / "git"
    config.mkdir(parents=True)
    (config / "ignore").write_text(".envrc_local\n")
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "xdg"))

    tree = create_worktree(repo, tmp_path / "home", "child")

    assert (tree.path / "vendor" / "lib" / "lib.py").read_text() == "LIB = 1\n"
    assert not (tree.path / ".envrc_local").exists()  # ignored by the user everywhere
