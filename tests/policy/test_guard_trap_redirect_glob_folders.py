"""An edit rule holds for a changed path with a glob in a folder part (`sed -i ...
t*/test_a.py`, `rm -rf t*`, `mv t* old`): each match is judged, a folder with
everything under it (a hunt's finding, item 5)."""

from __future__ import annotations

from pathlib import Path

import pytest
from tests.policy.test_guard_trap_redirect_glob import _decide, _workspace
from tests.policy.test_guard_trap_redirect_glob_cli import _run
from tests.policy.test_guard_trap_redirect_glob_cli import _workspace as _cli_workspace

from lathe.policy import carried
from lathe.policy.gate import Mode, Policy
from lathe.policy.rules import RuleSet


@pytest.mark.parametrize(
    "command",
    [
        "sed -i s/1/2/ t*/test_a.py",
        "rm -rf t*",
        "rm -rf te?ts",
        "rm */test_a.py",
        "rm -rf *",
        "cp notes.txt t*/test_a.py",
        "echo > t*/test_a.py",
        "mv t* old",
        "rm -rf [t]ests",
    ],
)
def test_an_edit_rule_holds_for_globbed_folders(tmp_path: Path, command: str) -> None:
    decision = _decide(tmp_path, command, deny=("edit(tests/**)",))
    assert decision.action == "deny", decision.reason
    assert "edit(tests/**)" in decision.reason


@pytest.mark.parametrize("command", ["rm -rf s*", "sed -i s/1/2/ s*/a.py", "rm -f *.txt"])
def test_globs_that_miss_the_rule_still_run(tmp_path: Path, command: str) -> None:
    assert _decide(tmp_path, command, deny=("edit(tests/**)",)).action == "allow"


def test_an_edit_rule_holds_for_a_glob_in_a_folder_part(tmp_path, fake_openai) -> None:
    ws = _cli_workspace(tmp_path)
    commands = ["sed -i s/1/2/ t*/test_a.py", "rm -rf t*", "mv t* old"]
    _run(fake_openai, ws, tmp_path, commands, "--approval", "full", "--deny", "edit(tests/**)")
    assert (ws / "tests" / "test_a.py").read_text() == "x = 1\n"


def test_a_rule_deep_inside_a_matched_folder_holds(tmp_path: Path) -> None:
    ws, home = _workspace(tmp_path)
    (ws / "tests" / "unit").mkdir()
    (ws / "tests" / "unit" / "test_b.py").write_text("z = 1\n")
    rules = RuleSet.from_strings(deny=["edit(tests/unit/**)"])
    policy = Policy(Mode.FULL, rules, ws, home, sandboxed=False)
    for command in ("rm -rf t*", "mv te* old", "rm -rf */unit"):
        decision = policy.decide("bash", {"command": command})
        assert decision.action == "deny", (command, decision.reason)
        assert "tests/unit" in decision.reason
    assert policy.decide("bash", {"command": "rm -rf s*"}).action == "allow"


def test_a_matched_folder_too_large_to_look_through_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    ws, home = _workspace(tmp_path)
    for i in range(5):
        (ws / "tests" / f"t{i}.py").write_text("")
    monkeypatch.setattr(carried, "WALK_LIMIT", 3)
    rules = RuleSet.from_strings(deny=["edit(tests/unit/**)"])
    policy = Policy(Mode.FULL, rules, ws, home, sandboxed=False)
    decision = policy.decide("bash", {"command": "rm -rf t*"})
    assert decision.action == "deny", decision.reason
    assert "too many" in decision.reason
    # A folder no rule could cover beneath is not looked through at all.
    assert policy.decide("bash", {"command": "rm -rf s*"}).action == "allow"
