"""Helpers for checkpoint tests: reading workspaces, the user's own git, shell changes."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path


def files(root: Path) -> dict[str, bytes]:
    """Every file under root (symlinks as their target), skipping the user's .git."""
    found: dict[str, bytes] = {}
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = [d for d in dirnames if d != ".git"]
        for name in filenames:
            full = Path(dirpath, name)
            rel = full.relative_to(root).as_posix()
            found[rel] = (
                b"-> " + os.readlink(full).encode() if full.is_symlink() else full.read_bytes()
            )
    return found


def dot_git(root: Path) -> dict[str, bytes]:
    """The user's .git byte for byte, read without running git (which would touch it)."""
    git_dir = root / ".git"
    return {
        str(p.relative_to(git_dir)): p.read_bytes()
        for p in sorted(git_dir.rglob("*"))
        if p.is_file()
    }


def user_git(ws: Path, *args: str) -> str:
    """The user's own git, as they would run it in the workspace."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    env.update(GIT_CONFIG_NOSYSTEM="1", GIT_CONFIG_GLOBAL=os.devnull)
    proc = subprocess.run(
        ["git", "-c", "user.name=User", "-c", "user.email=user@example.com", *args],
        cwd=ws,
        env=env,
        capture_output=True,
        text=True,
        check=True,
        stdin=subprocess.DEVNULL,
    )
    return proc.stdout


def write(ws: Path, rel: str, text: str) -> None:
    path = ws / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)


def shell(ws: Path, script: str) -> None:
    """A change made the way the agent's bash tool makes one."""
    subprocess.run(["bash", "-c", script], cwd=ws, check=True, stdin=subprocess.DEVNULL)
