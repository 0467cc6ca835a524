"""A workspace in a subfolder of a repository: the checkpoints ignore what git ignores
there, the rules of the .gitignore files above it included. They did not: `.env`, logs
and a whole `node_modules` went into the checkpoint store (one run grew it by 32 MB)."""

from __future__ import annotations

import subprocess
from pathlib import Path

from tests.checkpoint.helpers import user_git, write

from lathe.checkpoint import Checkpoints


def _recorded(cp: Checkpoints) -> set[str]:
    listed = subprocess.run(
        ["git", f"--git-dir={cp._repo.git_dir}", "ls-tree", "-r", "--name-only",
         "refs/lathe/checkpoints"],
        capture_output=True, text=True, check=True,
    )  # fmt: skip
    return set(listed.stdout.split())


def test_the_rules_of_gitignore_files_above_the_workspace_hold_in_it(
    tmp_path: Path, home: Path
) -> None:
    repo = tmp_path / "repo"
    repo.mkdir()
    user_git(repo, "init", "--quiet")
    write(repo, ".gitignore", "node_modules/\n.env\n*.log\n!keep.log\n/app/build/\n/build/\n")
    write(repo, "app/.gitignore", "cache/\n")
    write(repo, "app/src/.gitignore", "/generated.py\n")
    for name in ("src/main.py", ".env", "debug.log", "keep.log", "node_modules/p/i.js",
                 "build/out.bin", "cache/c.dat", "src/generated.py", "src/build/x.py"):  # fmt: skip
        write(repo / "app", name, "x\n")
    cp = Checkpoints(repo / "app", home)

    cp.snapshot("before")

    recorded = _recorded(cp)
    assert {"src/main.py", "keep.log", "src/build/x.py", ".gitignore"} <= recorded, recorded
    for ignored in (".env", "debug.log", "node_modules/p/i.js", "build/out.bin", "cache/c.dat",
                    "src/generated.py"):  # fmt: skip
        assert ignored not in recorded, recorded
