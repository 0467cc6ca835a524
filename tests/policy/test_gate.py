"""Approval modes, rules and the gate every tool call passes."""

from __future__ import annotations

from pathlib import Path

import pytest

from lathe.errors import UsageError
from lathe.policy.gate import ApprovalAnswer, Mode, Policy, PolicyGate
from lathe.policy.rules import RuleSet, parse_rule, path_matches


def policy(tmp_path: Path, mode: str, *, sandboxed=True, allow=(), deny=(), ask=()) -> Policy:
    return Policy(
        mode=Mode(mode),
        rules=RuleSet.from_strings(allow=allow, ask=ask, deny=deny),
        workspace=tmp_path,
        home=Path.home(),
        sandboxed=sandboxed,
    )


@pytest.mark.parametrize(
    ("mode", "tool", "arguments", "expected"),
    [
        ("read-only", "read", {"path": "a.py"}, "allow"),
        ("read-only", "edit", {"path": "a.py"}, "deny"),
        ("read-only", "bash", {"command": "ls"}, "deny"),
        ("ask", "grep", {"pattern": "x"}, "allow"),
        ("ask", "edit", {"path": "a.py"}, "ask"),
        ("ask", "bash", {"command": "pytest -q"}, "ask"),
        ("auto", "edit", {"path": "a.py"}, "allow"),
        ("auto", "bash", {"command": "pytest -q"}, "allow"),
        ("auto", "bash", {"command": "sudo make install"}, "ask"),
        ("auto", "bash", {"command": "git push --force"}, "ask"),
        ("full", "bash", {"command": "git push --force"}, "allow"),
        ("full", "bash", {"command": "rm -rf /"}, "deny"),
        ("full", "bash", {"command": "r''m -rf ~"}, "deny"),
    ],
)
def test_mode_defaults_and_the_hard_deny_list(tmp_path, mode, tool, arguments, expected):
    assert policy(tmp_path, mode).decide(tool, arguments).action == expected


def test_auto_mode_asks_for_commands_when_the_sandbox_is_missing(tmp_path):
    decision = policy(tmp_path, "auto", sandboxed=False).decide("bash", {"command": "pytest"})
    assert decision.action == "ask"
    assert "sandbox" in decision.reason


def test_rule_precedence_is_deny_then_ask_then_allow(tmp_path):
    p = policy(
        tmp_path,
        "ask",
        allow=["bash(git diff:*)", "bash(npm test)", "edit(src/**)"],
        deny=["bash(git diff --stat)"],
    )
    assert p.decide("bash", {"command": "git diff HEAD~1"}).action == "allow"
    assert p.decide("bash", {"command": "npm test"}).action == "allow"
    assert p.decide("bash", {"command": "npm test && rm x"}).action == "ask"
    assert p.decide("bash", {"command": "git diff --stat"}).action == "deny"
    assert p.decide("edit", {"path": "src/app/main.py"}).action == "allow"
    assert p.decide("edit", {"path": "tests/test_main.py"}).action == "ask"


def test_an_edit_rule_covers_every_tool_that_changes_files(tmp_path):
    p = policy(tmp_path, "auto", deny=["edit(tests/**)"], allow=["edit(src/**)"])
    assert p.decide("edit", {"path": "tests/test_a.py"}).action == "deny"
    assert p.decide("write", {"path": "tests/test_a.py"}).action == "deny"
    assert p.decide("write", {"path": "tests/new/test_b.py"}).action == "deny"
    assert p.decide("read", {"path": "tests/test_a.py"}).action == "allow"
    assert p.decide("write", {"path": "src/new.py"}).action == "allow"
    assert p.rules.denied_edit_patterns() == ["tests/**"]
    only_write = policy(tmp_path, "auto", deny=["write(tests/**)"])
    assert only_write.decide("write", {"path": "tests/a.py"}).action == "deny"
    assert only_write.decide("edit", {"path": "tests/a.py"}).action == "allow"


def test_a_denied_read_holds_for_every_tool(tmp_path):
    p = policy(tmp_path, "full", deny=["read(.env)", "read(**/secrets/**)"])
    assert p.decide("read", {"path": ".env"}).action == "deny"
    assert p.decide("read", {"path": "config/.env"}).action == "deny"
    assert p.decide("edit", {"path": ".env"}).action == "deny"
    assert p.decide("grep", {"pattern": "KEY", "path": "app/secrets/k.txt"}).action == "deny"
    assert p.decide("bash", {"command": "cat .env"}).action == "deny"
    assert p.decide("bash", {"command": "cd config && cat ./.env"}).action == "deny"
    assert p.decide("read", {"path": "README.md"}).action == "allow"


@pytest.mark.parametrize(
    ("path", "pattern", "expected"),
    [
        (".env", ".env", True),
        ("a/b/.env", ".env", True),
        (".envrc", ".env", False),
        ("src/a/b.py", "src/**", True),
        ("lib/src/b.py", "src/**", False),
        ("x/secrets/y/z", "**/secrets/**", True),
        ("key.pem", "*.pem", True),
    ],
)
def test_path_patterns(path, pattern, expected):
    assert path_matches(path, pattern) is expected


def test_bad_rules_and_modes_are_usage_errors():
    with pytest.raises(UsageError, match="TOOL\\(PATTERN\\)"):
        parse_rule("bash(git diff")
    with pytest.raises(UsageError, match="read-only, ask, auto, full"):
        Mode.parse("yolo")


class Approver:
    def __init__(self, *answers: ApprovalAnswer):
        self.answers = list(answers)
        self.asked = []

    async def ask(self, request):
        self.asked.append(request)
        return self.answers.pop(0)


async def test_headless_ask_becomes_a_denial_the_model_can_read(tmp_path):
    gate = PolicyGate(policy(tmp_path, "ask"))
    output = await gate.before_tool("bash", {"command": "pytest -q"})
    assert output is not None and output.is_error
    assert "needs approval" in output.content and "non-interactive" in output.content


async def test_approver_once_always_and_deny_with_reason(tmp_path):
    remembered = []
    approver = Approver(
        ApprovalAnswer("once"), ApprovalAnswer("always"), ApprovalAnswer("deny", "use make test")
    )
    gate = PolicyGate(policy(tmp_path, "ask"), approver, on_remember=remembered.append)

    assert await gate.before_tool("bash", {"command": "pytest"}) is None
    assert await gate.before_tool("bash", {"command": "pytest"}) is None
    assert await gate.before_tool("bash", {"command": "pytest"}) is None  # remembered
    denied = await gate.before_tool("bash", {"command": "tox"})

    assert len(approver.asked) == 3
    assert approver.asked[0].preview == "pytest"
    assert remembered == ["bash(pytest)"]
    assert denied is not None and "use make test" in denied.content


async def test_hard_deny_is_never_asked(tmp_path):
    approver = Approver()
    gate = PolicyGate(policy(tmp_path, "ask"), approver)
    output = await gate.before_tool("bash", {"command": "cd / && rm -rf *"})
    assert output is not None and output.is_error and "blocked" in output.content
    assert approver.asked == []


async def test_a_rule_denial_names_the_rule_and_says_not_to_work_around_it(tmp_path):
    gate = PolicyGate(policy(tmp_path, "auto", deny=["edit(tests/**)"]))
    output = await gate.before_tool("write", {"path": "tests/test_a.py", "content": "x"})
    assert output is not None and output.is_error
    assert "tests/test_a.py matches the rule edit(tests/**)" in output.content
    assert "another tool" in output.content and "different approach" in output.content


@pytest.mark.parametrize(
    "command",
    [
        "git push origin main",
        "git -C . push origin HEAD:refs/heads/v1",
        "git -c push.default=current push",
        "/usr/bin/git push",
        "git --no-pager push",
        "git --git-dir=.git --work-tree . push",
        "git push${IFS}origin",
        "git push $REMOTE",
        "git -c alias.pu=push pu",
        "PATH=/tmp/x:$PATH git push",
        "sudo git push",
        "taskset -c 0 git push",
        "setpriv --no-new-privs git push",
        # git config given by the environment or in another case (they pushed)
        "git -c ALIAS.pu=push pu",
        "GIT_CONFIG_COUNT=1 GIT_CONFIG_KEY_0=alias.p GIT_CONFIG_VALUE_0=push git p origin HEAD",
        "V=push git --config-env=alias.p=V p",
        "GIT_CONFIG_PARAMETERS=\"'alias.p=push'\" git p",
        "env GIT_CONFIG_COUNT=1 GIT_CONFIG_KEY_0=alias.p GIT_CONFIG_VALUE_0=push git p",
        "export GIT_CONFIG_COUNT=1 GIT_CONFIG_KEY_0=alias.p GIT_CONFIG_VALUE_0=push; git p",
    ],
)
def test_a_deny_rule_holds_against_every_spelling_of_its_command(tmp_path, command):
    # Any git option before `push` walked around --deny 'bash(git push:*)' in full mode.
    p = policy(tmp_path, "full", deny=["bash(git push:*)"])
    assert p.decide("bash", {"command": command}).action == "deny", command


@pytest.mark.parametrize("command", ["git status", "git -C . log", "/usr/bin/git pull"])
def test_a_deny_rule_leaves_other_commands_alone(tmp_path, command):
    p = policy(tmp_path, "full", deny=["bash(git push:*)"])
    assert p.decide("bash", {"command": command}).action == "allow", command


def test_an_allow_rule_still_needs_the_exact_command(tmp_path):
    p = policy(tmp_path, "ask", allow=["bash(git status)"])
    assert p.decide("bash", {"command": "git status"}).action == "allow"
    for other in ("./git status", "git -C /elsewhere status", "git $X"):
        assert p.decide("bash", {"command": other}).action == "ask", other


@pytest.mark.parametrize(("sandboxed", "expected"), [(True, "allow"), (False, "deny")])
def test_read_only_mode_runs_an_allowed_command_only_in_its_sandbox(tmp_path, sandboxed, expected):
    # Unsandboxed, `printf x > .git/config` under bash(printf:*) wrote in read-only mode.
    p = policy(tmp_path, "read-only", sandboxed=sandboxed, allow=["bash(printf:*)"])
    assert p.decide("bash", {"command": "printf x"}).action == expected


@pytest.mark.parametrize(
    ("command", "expected"),
    [("strace -o ~/.bashrc ls", "deny"), ("script -q -c ls ~/.bashrc", "deny"),
     ("strace --output=x.log ls", "allow"), ("strace -o /dev/null ls", "allow")],
)  # fmt: skip
def test_a_file_a_wrapper_writes_itself_is_judged_as_a_redirect(tmp_path, command, expected):
    # Peeled, `strace -o ~/.bashrc ls` met bash(ls:*) as `ls` and wrote outside; then
    # it only asked, which full mode turns into a yes. Judged as `ls > F` is.
    for mode in ("auto", "full"):
        p = policy(tmp_path, mode, sandboxed=False, allow=["bash(ls:*)"])
        assert p.decide("bash", {"command": command}).action == expected, (mode, command)


@pytest.mark.parametrize("sandboxed", [True, False])
def test_a_command_writing_where_an_edit_rule_asks_asks_whatever_allows_the_command(
    tmp_path, sandboxed
):
    # An ask rule had made _command_changes stand aside, and the bash allow rule then
    # ran `echo x > .git/config` unasked (an ask rule loosened the gate).
    (tmp_path / ".git").mkdir()
    gate = policy(tmp_path, "ask", sandboxed=sandboxed, allow=["bash(echo:*)", "bash(sed:*)"],
                  ask=["edit(.git/**)", "edit(src/**)"])  # fmt: skip
    for command in ("echo x > .git/config", "sed -i s/a/b/ src/x.py"):
        decision = gate.decide("bash", {"command": command})
        assert decision.action == "ask", (command, decision)
        assert decision.key == f"bash({command})"
    assert gate.decide("bash", {"command": "echo x > notes.txt"}).action == "allow"
