"""`trap -- 'CMD' EXIT` ran CMD unjudged: a leading `--` was taken for an option that
sets nothing (a hunt's finding, item 1). The workspace and `_decide` here serve the
other test_guard_trap_redirect_glob_* files, one for each of the hunt's items:
input redirection (`_redirect`), scripts found at run time (`_scripts`), scripts made
earlier in the command line (`_copied`) and globs in a folder part (`_folders`)."""

from __future__ import annotations

from pathlib import Path

import pytest

from lathe.policy.gate import Decision, Mode, Policy
from lathe.policy.rules import RuleSet

SECRET = "API_TOKEN=s3cr3t-value"


def _workspace(tmp_path: Path) -> tuple[Path, Path]:
    """A home folder holding the workspace; the workspace holds `.env`, `tests/`,
    `src/` and a few scripts."""
    home = tmp_path / "home"
    ws = home / "project"
    (ws / "tests").mkdir(parents=True)
    (ws / "src").mkdir()
    (home / "victim").mkdir()
    (ws / ".env").write_text(SECRET + "\n")
    (ws / "tests" / "test_a.py").write_text("x = 1\n")
    (ws / "src" / "a.py").write_text("y = 1\n")
    (ws / "clean.sh").write_text("rm -rf src\n")
    (ws / "push.sh").write_text("git push origin HEAD:main\n")
    (ws / "st.sh").write_text("git status\n")
    (ws / "nuke.sh").write_text(f"rm -rf {home / 'victim'}\n")
    (ws / "notes.txt").write_text("hello\n")
    return ws, home


def _decide(
    tmp_path: Path, command: str, mode: Mode = Mode.FULL, deny: tuple[str, ...] = ()
) -> Decision:
    ws, home = _workspace(tmp_path)
    policy = Policy(mode, RuleSet.from_strings(deny=deny), ws, home, sandboxed=mode != Mode.FULL)
    return policy.decide("bash", {"command": command})


# -- trap --


@pytest.mark.parametrize(
    "command",
    [
        "trap -- 'rm -rf ~' EXIT",
        "trap -- 'rm -rf ~/victim' EXIT INT",
        'trap -- "$(echo rm -rf ~)" EXIT',
    ],
)
def test_a_trap_action_after_double_dash_is_judged(tmp_path: Path, command: str) -> None:
    decision = _decide(tmp_path, command)
    assert decision.action == "deny", decision.reason


@pytest.mark.parametrize("command", ["trap -p", "trap -l", "trap -p EXIT", "trap -- - EXIT"])
def test_trap_forms_that_run_nothing_still_pass(tmp_path: Path, command: str) -> None:
    assert _decide(tmp_path, command).action == "allow"


def test_a_trap_action_after_double_dash_meets_the_rules(tmp_path: Path) -> None:
    decision = _decide(tmp_path, "trap -- 'git push' EXIT", deny=("bash(git push:*)",))
    assert decision.action == "deny", decision.reason
