"""A deny or ask rule holds against whatever may be its command: also when xargs supplies
the words (`echo push origin HEAD | xargs git` pushed past `--deny 'bash(git push:*)'`),
and when the command runs from a string the guard already reads for the hard-deny list —
a one-liner's `os.system("git push")`, a script the same command line wrote. An allow
rule still needs exactly its command, written by the model.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from lathe.policy.gate import Mode, Policy
from lathe.policy.rules import RuleSet


def _policy(tmp_path: Path, mode: str = "full", **rules: list[str]) -> Policy:
    sandboxed = mode != "full"
    return Policy(
        Mode(mode), RuleSet.from_strings(**rules), tmp_path, tmp_path / "home", sandboxed=sandboxed
    )


@pytest.mark.parametrize(
    "command",
    [
        "echo push origin HEAD | xargs git",
        "echo push | xargs -n1 git",
        "xargs -I{} git {} <<< push",
        "xargs -i git {} origin <<< push",
        "xargs --replace=@ git @ <<< push",
        "printf 'push\\n' | xargs -0 git",
        "xargs git < args.txt",
        "cat args.txt | xargs -r git",
        "find . -name x | xargs -I{} git push {}",
        "python3 -c 'import os; os.system(\"git push\")'",
        'python3 -c \'import subprocess; subprocess.run(["git", "push", "origin"])\'',
        "perl -e 'system(\"git push\")'",
        "echo 'git push' > p.sh; bash p.sh",
        "printf 'git push origin\\n' > p.sh && source p.sh",
        "printf 'git push' | bash",
        "git $(echo push)",
    ],
)
def test_a_deny_rule_holds_for_words_supplied_at_run_time(tmp_path: Path, command: str) -> None:
    decision = _policy(tmp_path, deny=["bash(git push:*)"]).decide("bash", {"command": command})
    assert decision.action == "deny", decision.reason
    assert "bash(git push:*)" in decision.reason


@pytest.mark.parametrize(
    "command",
    [
        "git status",
        "echo status | xargs -I{} git {}",
        "python3 -c 'import os; os.system(\"git status\")'",
        "echo 'git log' > p.sh; bash p.sh",
        "find . -name '*.pyc' | xargs rm",
    ],
)
def test_other_commands_pass(tmp_path: Path, command: str) -> None:
    decision = _policy(tmp_path, deny=["bash(git push:*)"]).decide("bash", {"command": command})
    assert decision.action == "allow", decision.reason


def test_an_ask_rule_asks_for_a_command_a_one_liner_runs(tmp_path: Path) -> None:
    policy = _policy(tmp_path, "auto", ask=["bash(npm publish:*)"])
    command = "python3 -c 'import os; os.system(\"npm publish\")'"
    assert policy.decide("bash", {"command": command}).action == "ask"


def test_an_allow_rule_still_needs_the_command_the_model_wrote(tmp_path: Path) -> None:
    policy = _policy(tmp_path, "ask", allow=["bash(python3:*)"])
    command = "python3 -c 'import os; os.system(\"git push\")'"
    assert policy.decide("bash", {"command": command}).action == "allow"
    policy = _policy(tmp_path, "ask", allow=["bash(git push:*)"])
    assert policy.decide("bash", {"command": command}).action == "ask"
    assert policy.decide("bash", {"command": "echo push | xargs git"}).action == "ask"


@pytest.mark.parametrize(
    "command",
    [
        "bash push.sh",
        "sh push.sh",
        "source push.sh",
        ". ./push.sh",
        "./push.sh",
        "cd sub && bash ../push.sh",
    ],
)
def test_a_deny_rule_holds_for_a_command_a_script_on_disk_names(
    tmp_path: Path, command: str
) -> None:
    # A script an earlier call wrote was held to the hard-deny list only: `bash push.sh`
    # pushed past `--deny 'bash(git push:*)'`.
    (tmp_path / "sub").mkdir()
    script = tmp_path / "push.sh"
    script.write_text("#!/bin/sh\nset -e\necho pushing\ngit push origin main\n")
    script.chmod(0o755)
    decision = _policy(tmp_path, deny=["bash(git push:*)"]).decide("bash", {"command": command})
    assert decision.action == "deny", decision.reason
    assert "bash(git push:*)" in decision.reason
    policy = _policy(tmp_path, "auto", ask=["bash(git push:*)"])
    assert policy.decide("bash", {"command": command}).action == "ask"


@pytest.mark.parametrize(
    "line", ["echo push | xargs git", "xargs git < args.txt", 'git "$ACTION" origin main']
)
def test_a_script_on_disk_naming_the_program_is_held_to_what_its_words_may_be(
    tmp_path: Path, line: str
) -> None:
    # Words known only at run time after the program it names may be the rule's: the
    # same line in a file had passed where it was refused on the command line.
    (tmp_path / "e.sh").write_text(line + "\n")
    policy = _policy(tmp_path, deny=["bash(git push:*)"])
    assert policy.decide("bash", {"command": "sh e.sh"}).action == "deny"


def test_a_script_on_disk_is_held_to_the_commands_it_names_not_those_it_may_run(
    tmp_path: Path,
) -> None:
    # Its `$RUNNER` lines may be anything: matching them as "could be git push" would
    # refuse every ordinary script under any deny rule.
    (tmp_path / "test.sh").write_text('RUNNER=${RUNNER:-pytest}\n"$RUNNER" -q\ngit status\n')
    policy = _policy(tmp_path, deny=["bash(git push:*)"])
    assert policy.decide("bash", {"command": "bash test.sh"}).action == "allow"
