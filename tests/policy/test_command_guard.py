"""The guard's API beyond the decision: reasons a user reads, the simple commands rules
are matched against, and `matches_rule`."""

from __future__ import annotations

from pathlib import Path

import pytest

from lathe.policy.command import analyze, matches_rule

WORKSPACE = Path("/home/dev/project")
HOME = Path("/home/dev")


def _analyze(command: str):
    return analyze(command, workspace=WORKSPACE, home=HOME, environ={})


def test_reasons_name_the_path_and_why() -> None:
    assert _analyze("rm -rf /").reasons == (
        "rm -rf on / (the filesystem root, outside the workspace)",
    )
    assert _analyze("rm -rf ../other").reasons == (
        "rm -rf on ../other (/home/dev/other, outside the workspace)",
    )
    assert _analyze("\\rm -rf ~").reasons == ("rm -rf on ~ (the home directory /home/dev)",)


def test_a_deny_keeps_the_asks_found_on_the_way() -> None:
    analysis = _analyze("sudo rm -rf /")
    assert analysis.decision == "deny"
    assert [f.decision for f in analysis.findings] == ["ask", "deny"]
    assert "elevated privileges (sudo)" in analysis.findings[0].reason


def test_parse_error_asks_with_the_reason() -> None:
    analysis = _analyze('echo "unterminated')
    assert analysis.decision == "ask"
    assert analysis.reasons[0].startswith("the command could not be parsed")


def test_simple_commands_are_listed_through_lists_pipes_and_wrappers() -> None:
    analysis = _analyze("cd src && timeout 5 pytest -q | tee log; bash -c 'git diff --stat'")
    listed = [(c.name, c.args, c.via, c.cwd) for c in analysis.commands]
    src = WORKSPACE / "src"
    assert listed == [
        ("cd", ("src",), (), WORKSPACE),
        ("pytest", ("-q",), ("timeout",), src),
        ("tee", ("log",), (), src),
        # src is not on disk: `cd src` may fail, and bash goes on after the `;`.
        ("git", ("diff", "--stat"), ("bash -c",), src),
        ("git", ("diff", "--stat"), ("bash -c",), WORKSPACE),
    ]


def test_words_are_normalised_and_unknown_ones_flagged() -> None:
    (quoted,) = _analyze("g''it \"diff\" \\--cached").commands
    assert (quoted.name, quoted.args, quoted.resolved) == ("git", ("diff", "--cached"), True)
    (dynamic,) = _analyze("git log $RANGE").commands
    assert dynamic.resolved is False
    assert dynamic.args == ("log", "$RANGE")


def test_command_substitutions_are_commands_too() -> None:
    names = [c.name for c in _analyze("echo $(whoami) `hostname` <(ls)").commands]
    assert sorted(names) == ["echo", "hostname", "ls", "whoami"]


def test_matches_rule_prefix_and_exact() -> None:
    (diff,) = _analyze("git diff HEAD~1 -- src").commands
    assert matches_rule(diff, "git diff:*")
    assert not matches_rule(diff, "git diff")
    assert not matches_rule(diff, "git log:*")
    (test,) = _analyze("npm test").commands
    assert matches_rule(test, "npm test")
    assert matches_rule(test, "npm test:*")
    assert not matches_rule(test, "npm test --watch")


def test_matches_rule_sees_through_transparent_wrappers_only() -> None:
    (timed,) = _analyze("timeout 60 npm test").commands
    assert matches_rule(timed, "npm test")
    (elevated,) = _analyze("sudo -E apt install jq").commands
    assert not matches_rule(elevated, "apt install:*")
    assert matches_rule(elevated, "sudo apt install:*")


def test_matches_rule_never_matches_what_is_only_known_at_run_time() -> None:
    (dynamic,) = _analyze("git diff $(cat ref)").commands[-1:]
    assert dynamic.name == "git"
    assert not matches_rule(dynamic, "git diff:*")
    (named,) = _analyze("$GIT diff").commands
    assert not matches_rule(named, "git diff:*")
    (hijacked,) = _analyze("PATH=/tmp/evil:$PATH git diff").commands
    assert not matches_rule(hijacked, "git diff:*")
    (fed,) = _analyze("find . -name '*.py' | xargs grep TODO").commands[1:]
    assert matches_rule(fed, "grep TODO:*")
    assert not matches_rule(fed, "grep TODO")


def test_a_symlink_inside_the_workspace_that_leads_out_is_outside(tmp_path: Path) -> None:
    workspace = tmp_path / "ws"
    outside = tmp_path / "elsewhere"
    (outside / "data").mkdir(parents=True)
    workspace.mkdir()
    (workspace / "link").symlink_to(outside)
    analysis = analyze("rm -rf link/data", workspace=workspace, home=tmp_path / "h", environ={})
    assert analysis.decision == "deny"
    analysis = analyze("rm -rf link", workspace=workspace, home=tmp_path / "h", environ={})
    assert analysis.decision == "allow"  # rm removes the link itself, not its target


@pytest.mark.parametrize(
    "command",
    [
        "flock /tmp/lockf rm -rf ~/v4",
        "flock -w 5 /tmp/lockf -c 'rm -rf ~'",
        "GIT_EXTERNAL_DIFF='rm -rf ~/v3; true' git diff",
        "GIT_EDITOR='rm -rf ~' git commit",
        "EDITOR='rm -rf ~' git commit",
        "GIT_SEQUENCE_EDITOR='rm -rf ~' git rebase -i HEAD~2",
        "env GIT_SSH_COMMAND='rm -rf ~' git fetch",
    ],
)
def test_a_command_hidden_in_a_wrapper_or_a_program_variable_is_judged(command) -> None:
    # Each ran `rm -rf` in the home folder under --approval full.
    assert _analyze(command).decision == "deny", command


@pytest.mark.parametrize(
    "command",
    ["git -C ~ checkout -- .", "git --work-tree ~ checkout -- .", "git -C ~ clean -fdx",
     "git -C /etc reset --hard", "git --git-dir=/home/dev/.dotfiles --work-tree=/home/dev add ."],
)  # fmt: skip
def test_git_changing_files_outside_the_workspace_is_denied(command) -> None:
    assert _analyze(command).decision == "deny", command


@pytest.mark.parametrize("command", ["git -C sub checkout -- .", "git -C ~ log", "git status"])
def test_git_inside_the_workspace_or_only_reading_is_not_denied(command) -> None:
    assert _analyze(command).decision != "deny", command


def test_a_glob_through_a_link_made_to_home_is_judged_where_it_leads() -> None:
    # `rm -rf h1/` was denied, `rm -rf h1/*` wiped the folder the link leads to.
    assert _analyze("ln -s ~/v1 h1; rm -rf h1/*").decision == "deny"
    assert _analyze("ln -s ~ hy; rm -rf hy/.bash*").decision == "deny"
