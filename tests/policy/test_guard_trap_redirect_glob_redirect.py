"""A read rule holds for input redirection: `cat < .env`, `$(<.env)`, `read l < .env`,
`exec 3<.env` showed the file a read rule denies (a hunt's finding, item 2).

The walker (shell_parse.py) keeps them on the command it records (`$(<f)` and those no
command carries as a `cat`), and the gate judges them as it judges the command's words."""

from __future__ import annotations

from pathlib import Path

import pytest
from tests.policy.test_guard_trap_redirect_glob import SECRET, _decide, _workspace
from tests.policy.test_guard_trap_redirect_glob_cli import _run
from tests.policy.test_guard_trap_redirect_glob_cli import _workspace as _cli_workspace

from lathe.policy import command as command_module
from lathe.policy.command import Analysis
from lathe.policy.gate import Mode, Policy
from lathe.policy.rules import RuleSet
from lathe.policy.shell_parse import Redirect, SimpleCommand
from lathe.policy.shell_words import Word


@pytest.mark.parametrize(
    ("op", "target"), [("<", ".env"), ("<", ".e*"), ("<>", ".env"), ("<", "../project/.env")]
)
def test_the_gate_judges_the_input_redirections_a_command_carries(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, op: str, target: str
) -> None:
    ws, home = _workspace(tmp_path)
    word = Word(target, target, glob="*" in target)
    cat = SimpleCommand((Word("cat", "cat"),), ws, redirects=(Redirect(op, word, ws, "3"),))
    found = Analysis("allow", (), (), (cat,))
    monkeypatch.setattr(command_module, "analyze", lambda *args, **kwargs: found)
    policy = Policy(Mode.FULL, RuleSet.from_strings(deny=["read(.env)"]), ws, home, sandboxed=False)
    decision = policy.decide("bash", {"command": f"cat {op} {target}"})
    assert decision.action == "deny", decision.reason
    assert "a read rule denies .env" in decision.brief


@pytest.mark.parametrize(
    "command",
    [
        "cat < .env",
        "cat <.env",
        'echo "$(<.env)"',
        "x=$(<.env); echo $x",
        "read l < .env; echo $l",
        "exec 3<.env; cat <&3",
        "base64 < .env",
        "cat < .e*",
        "cat 0< .env",
        "cat 3<> .env",
        "bash -c 'cat < .env'",
        "while read l; do echo $l; done < .env",
        "{ cat; } < .env",
    ],
)
def test_a_read_rule_holds_for_input_redirection(tmp_path: Path, command: str) -> None:
    decision = _decide(tmp_path, command, deny=("read(.env)",))
    assert decision.action == "deny", decision.reason
    assert ".env" in decision.reason


@pytest.mark.parametrize("command", ["cat < notes.txt", "x=$(<notes.txt)", "exec 3<notes.txt"])
def test_other_files_may_still_be_redirected_in(tmp_path: Path, command: str) -> None:
    assert _decide(tmp_path, command, deny=("read(.env)",)).action == "allow"


def test_a_denied_file_is_not_shown_through_an_input_redirection(tmp_path, fake_openai) -> None:
    ws = _cli_workspace(tmp_path)
    commands = ["cat < .env", 'echo "$(<.env)"', "exec 3<.env; cat <&3"]
    _run(fake_openai, ws, tmp_path, commands, "--approval", "full", "--deny", "read(.env)")
    assert SECRET not in str(fake_openai.chat_bodies()[-1]["messages"])
