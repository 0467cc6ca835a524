"""A script named by a glob (`bash cl*.sh`), fed by xargs (`echo x.sh | xargs bash`) or
found by `find -exec sh {}` is read as `bash x.sh` is (a hunt's finding, item 3)."""

from __future__ import annotations

from pathlib import Path

import pytest
from tests.policy.test_guard_trap_redirect_glob import _decide, _workspace
from tests.policy.test_guard_trap_redirect_glob_cli import _run
from tests.policy.test_guard_trap_redirect_glob_cli import _workspace as _cli_workspace

from lathe.policy.gate import Mode, Policy
from lathe.policy.rules import RuleSet


@pytest.mark.parametrize(
    "command",
    [
        "bash cl*.sh",
        "sh ./cle?n.sh",
        "source cl*.sh",
        "echo clean.sh | xargs bash",
        "echo clean.sh | xargs sh",
        "find . -name clean.sh -exec sh {} \\;",
        "find . -name clean.sh -exec bash {} +",
        "printf 'rm -rf src' > z1.sh; bash z*.sh",
        "printf 'clean.sh' | xargs -n1 bash",
    ],
)
def test_a_script_found_at_run_time_is_read(tmp_path: Path, command: str) -> None:
    decision = _decide(tmp_path, command, Mode.AUTO, deny=("bash(rm:*)",))
    assert decision.action == "deny", decision.reason


def test_a_glob_named_script_outside_the_workspace_is_refused_in_full(tmp_path: Path) -> None:
    decision = _decide(tmp_path, "bash nu*.sh")
    assert decision.action == "deny", decision.reason


@pytest.mark.parametrize(
    "command",
    [
        "bash no-such-*.sh",
        "ls | xargs bash",
        "xargs bash < list.txt",
        "find . -name '*.sh' -exec bash {} \\;",
        "find . -name x.sh | xargs -n1 sh",
    ],
)
def test_a_script_only_run_time_names_asks(tmp_path: Path, command: str) -> None:
    ws = tmp_path / "project"
    (ws / "sub").mkdir(parents=True)
    (ws / "sub" / "x.sh").write_text("echo fine\n")
    policy = Policy(
        Mode.AUTO, RuleSet.from_strings(deny=("bash(rm:*)",)), ws, tmp_path, sandboxed=True
    )
    decision = policy.decide("bash", {"command": command})
    assert decision.action == "ask", decision.reason


def test_a_harmless_glob_named_script_runs(tmp_path: Path) -> None:
    ws, home = _workspace(tmp_path)
    (ws / "build.sh").write_text("echo building\n")
    policy = Policy(Mode.AUTO, RuleSet.from_strings(deny=("bash(rm:*)",)), ws, home, sandboxed=True)
    assert policy.decide("bash", {"command": "bash bu*.sh"}).action == "allow"


def test_a_script_named_by_a_glob_or_fed_by_xargs_is_read(tmp_path, fake_openai) -> None:
    ws = _cli_workspace(tmp_path)
    commands = [
        "bash cl*.sh",
        "echo clean.sh | xargs bash",
        "find . -name clean.sh -exec sh {} \\;",
    ]
    _run(fake_openai, ws, tmp_path, commands, "--approval", "full", "--deny", "bash(rm:*)")
    assert (ws / "src" / "a.py").exists()
