"""Helpers for checkpoint tests: reading workspaces, the user's own git, shell changes."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from tests.fakes.openai_server import Call


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


def lathe(tmp_path: Path, *args: str, umask: int | None = None) -> subprocess.CompletedProcess:
    """`python -m lathe ARGS` in `tmp_path`, its LATHE_HOME `tmp_path/home`, no key or
    setting of the caller's environment; `umask` the one it runs under."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("LATHE_", "OPENAI_"))}
    env.update({"OPENAI_API_KEY": "sk-test", "LATHE_HOME": str(tmp_path / "home")})
    return subprocess.run(
        [sys.executable, "-m", "lathe", *args], cwd=tmp_path, env=env,
        capture_output=True, text=True, timeout=120, stdin=subprocess.DEVNULL,
        preexec_fn=None if umask is None else lambda: os.umask(umask),
    )  # fmt: skip


def run(server, ws: Path, tmp_path: Path, *args: str) -> subprocess.CompletedProcess:
    """`lathe run` in full mode against the fake `server`, in `ws`."""
    return lathe(
        tmp_path, "run", "--model", "m", "--base-url", server.base_url, "--approval", "full",
        "-C", str(ws), *args,
    )  # fmt: skip


def bash(command: str) -> Call:
    return Call("bash", {"command": command})
