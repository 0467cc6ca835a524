"""The second guard hunt's links and copies through the real CLI (`lathe run` against
the scripted fake model): each command deleted the victim (a folder in the fake home) in
full mode, or pushed past `--deny 'bash(git push:*)'` in auto mode, before its fix."""

from __future__ import annotations

import shutil

from tests.policy.test_guard_ifs_links_path import _places, _run
from tests.policy.test_guard_r2_ifs_links_cli import NO_PUSH, _pushed, _repository

RM = shutil.which("rm") or "/bin/rm"
GIT = shutil.which("git") or "/usr/bin/git"


def test_cli_full_mode_refuses_a_deletion_through_a_link_or_copy_made_in_the_line(
    tmp_path, fake_openai
):
    ws, _, victim = _places(tmp_path)
    commands = [
        f"cp -s {RM} d; ./d -rf {victim}",
        f"ln -s {RM} d2 && PATH=.:$PATH d2 -rf {victim}",
        f"cp {RM} d3; ./d3 -rf {victim}",
    ]
    result = _run(fake_openai, tmp_path, ws, commands, "--approval", "full")
    assert result.returncode == 0, result.stderr
    assert (victim / "keep.txt").exists()


def test_cli_a_deny_rule_holds_for_a_link_made_in_the_line(tmp_path, fake_openai):
    ws, _, _ = _places(tmp_path)
    remote = _repository(ws)
    commands = [
        f"cp -s {GIT} g; ./g push",
        f"ln -s {GIT} g2 && PATH=.:$PATH g2 push",
        f"mkdir -p b2; ln -s {GIT} b2/x; PATH=b2:$PATH x push",
    ]
    result = _run(fake_openai, tmp_path, ws, commands, *NO_PUSH)
    assert result.returncode == 0, result.stderr
    assert not _pushed(remote)
