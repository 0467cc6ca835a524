"""The second guard hunt's IFS findings through the real CLI (`lathe run` against the
scripted fake model): each command deleted the victim (a folder in the fake home) in
full mode, or pushed past `--deny 'bash(git push:*)'` in auto mode (to a bare repository
inside the workspace, which the sandbox lets it write), before its fix."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

from tests.policy.test_guard_ifs_links_path import _places, _run

GIT = shutil.which("git") or "/usr/bin/git"
NO_PUSH = ("--approval", "auto", "--deny", "bash(git push:*)")


def _repository(ws: Path) -> Path:
    """Make `ws` a repository with one commit whose branch pushes to a bare repository
    inside it; the bare repository's folder, empty of branches until a push."""
    remote = ws / "remote.git"
    git = [GIT, "-c", "user.name=t", "-c", "user.email=t@example.com"]
    git += ["-c", "init.defaultBranch=main"]
    subprocess.run([*git, "init", "-q", "--bare", str(remote)], check=True)
    subprocess.run([*git, "init", "-q", str(ws)], check=True)
    (ws / "app.py").write_text("x = 1\n")
    subprocess.run([*git, "-C", str(ws), "add", "app.py"], check=True)
    subprocess.run([*git, "-C", str(ws), "commit", "-qm", "one"], check=True)
    for key, value in [
        ("remote.origin.url", str(remote)),
        ("branch.main.remote", "origin"),
        ("branch.main.merge", "refs/heads/main"),
    ]:
        subprocess.run([GIT, "-C", str(ws), "config", key, value], check=True)
    return remote


def _pushed(remote: Path) -> bool:
    return any((remote / "refs" / "heads").iterdir())


def test_cli_full_mode_refuses_deletions_split_on_an_ifs_set_in_other_ways(tmp_path, fake_openai):
    ws, _, victim = _places(tmp_path)
    commands = [
        f"printf -v IFS -- @; c=rm@-rf@{victim}; $c",
        f"declare -u IFS=q; c=rmQ-rfQ{victim}; $c",
        f"shopt -s lastpipe; echo @ | read IFS; c=rm@-rf@{victim}; $c",
        f"set -o posix; IFS=@ export x=1; c=rm@-rf@{victim}; $c",
        f"POSIXLY_CORRECT=1; IFS=@ :; c=rm@-rf@{victim}; $c",
    ]
    result = _run(fake_openai, tmp_path, ws, commands, "--approval", "full")
    assert result.returncode == 0, result.stderr
    assert (victim / "keep.txt").exists()


def test_cli_a_deny_rule_holds_for_words_split_on_an_ifs_set_in_other_ways(tmp_path, fake_openai):
    ws, _, _ = _places(tmp_path)
    remote = _repository(ws)
    commands = [
        "printf -v IFS -- @; c=git@push@origin; $c",
        "exec {IFS}>/dev/null; c=git1push1origin; $c",
    ]
    result = _run(fake_openai, tmp_path, ws, commands, *NO_PUSH)
    assert result.returncode == 0, result.stderr
    assert not _pushed(remote)
