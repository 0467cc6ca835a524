"""A script made or rewritten earlier in the same command line (cp, mv, ln, install,
rsync; sed -i, perl -pi, patch, dd, git checkout) is judged by what it will hold (a
hunt's finding, item 4)."""

from __future__ import annotations

from pathlib import Path

import pytest
from tests.policy.test_guard_trap_redirect_glob import _decide
from tests.policy.test_guard_trap_redirect_glob_cli import _run
from tests.policy.test_guard_trap_redirect_glob_cli import _workspace as _cli_workspace

from lathe.policy.gate import Mode


@pytest.mark.parametrize(
    ("command", "rule"),
    [
        ("cp clean.sh c2; bash c2", "bash(rm:*)"),
        ("cp -f clean.sh c2 && sh ./c2", "bash(rm:*)"),
        ("install clean.sh c2; bash c2", "bash(rm:*)"),
        ("ln -s clean.sh c2; bash c2", "bash(rm:*)"),
        ("rsync clean.sh c2; bash c2", "bash(rm:*)"),
        ("mkdir d; cp clean.sh d; bash d/clean.sh", "bash(rm:*)"),
        ("mv push.sh p.sh && bash p.sh", "bash(git push:*)"),
        ("cp push.sh st.sh; bash st.sh", "bash(git push:*)"),
        ("cp clean.sh a; mv a b; bash b", "bash(rm:*)"),
        ("mkdir d && cp clean.sh push.sh d && bash d/clean.sh", "bash(rm:*)"),
        ("cp clean.sh src/ && cp -r src s2 && bash s2/clean.sh", "bash(rm:*)"),
        ("cp clean.sh z1.sh; bash z*.sh", "bash(rm:*)"),
    ],
)
def test_a_copied_script_is_judged_by_what_it_holds(
    tmp_path: Path, command: str, rule: str
) -> None:
    decision = _decide(tmp_path, command, Mode.AUTO, deny=(rule,))
    assert decision.action == "deny", decision.reason


@pytest.mark.parametrize(
    "command",
    [
        "sed -i 's/status/push/' st.sh; bash st.sh",
        "perl -pi -e 's/status/push/' st.sh; bash st.sh",
        "patch st.sh fix.diff; bash st.sh",
        "git checkout -- st.sh; bash st.sh",
        "dd if=push.sh of=st.sh; bash st.sh",
        "cp $X st.sh; bash st.sh",
        "sed -i 's/status/push/' *.sh; bash st.sh",
        "git checkout . && bash st.sh",
        "ruby -i -pe 'sub(/status/, %q(push))' st.sh; ./st.sh",
    ],
)
def test_a_script_rewritten_in_place_asks(tmp_path: Path, command: str) -> None:
    decision = _decide(tmp_path, command, Mode.AUTO, deny=("bash(git push:*)",))
    assert decision.action in ("ask", "deny"), decision.reason
    assert decision.action == "deny" or "written at run time" in decision.reason


def test_a_script_copied_then_run_unchanged_still_runs(tmp_path: Path) -> None:
    decision = _decide(tmp_path, "cp st.sh s2; bash s2", Mode.AUTO, deny=("bash(git push:*)",))
    assert decision.action == "allow", decision.reason


def test_a_script_copied_or_rewritten_first_is_judged_by_its_new_text(
    tmp_path, fake_openai
) -> None:
    ws = _cli_workspace(tmp_path)
    commands = [
        "cp clean.sh c2; bash c2",
        "mv clean.sh c3.sh && bash c3.sh",
        "sed -i 's/echo fine/rm -rf src/' st.sh; bash st.sh",
    ]
    _run(fake_openai, ws, tmp_path, commands, "--approval", "auto", "--deny", "bash(rm:*)")
    assert (ws / "src" / "a.py").exists()
    assert (ws / "st.sh").read_text() == "echo fine\n"
