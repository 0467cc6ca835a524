"""A second guard hunt's findings about globs (each case failed before its fix):

1. a glob matched dotfiles, so `grep -n foo *` was refused under `--deny 'read(.env)'`,
   though bash's `*` skips them unless dotglob is on; find's `{}` was taken for `./*`;
2. a changed glob was cut at its first wildcard (`rm -rf */build` judged as `rm -rf *`)
   and a find's `-delete` or `-exec rm {}` as changing everything below its root;
3. a copy into a glob-named folder (`cp src/a.py t*/`) passed an edit rule;
4. `dd if=.env` and `xargs -a .env echo` read a read-denied file unchecked.

The workspace is `test_guard_trap_redirect_glob._workspace`'s, with `deploy/prod.env`."""

from __future__ import annotations

from pathlib import Path

import pytest
from tests.policy.test_guard_trap_redirect_glob import _workspace

from lathe.policy.gate import Decision, Mode, Policy
from lathe.policy.rules import RuleSet


def _policy(tmp_path: Path, *deny: str, mode: Mode = Mode.FULL) -> Policy:
    ws, home = _workspace(tmp_path)
    (ws / "deploy").mkdir()
    (ws / "deploy" / "prod.env").write_text("DB=secret\n")
    rules = RuleSet.from_strings(deny=deny)
    return Policy(mode, rules, ws, home, sandboxed=mode not in (Mode.FULL, Mode.READ_ONLY))


def _decide(tmp_path: Path, command: str, *deny: str, mode: Mode = Mode.FULL) -> Decision:
    return _policy(tmp_path, *deny, mode=mode).decide("bash", {"command": command})


# -- 1. a glob does not match dotfiles; find's {} is what find selects ------------------

EVERYDAY_GLOBS = [
    "grep -n foo *",
    "grep -rn foo *",
    "wc -l *",
    "ls *",
    "ls -la *",
    "du -sh *",
    "file *",
    "md5sum *",
    "cp * backup/",
    "cp -r * /tmp/x",
    "tar czf all.tgz *",
    "zip -r all.zip *",
    "mv * old/",
    "mkdir old && mv * old/",
    "cat */*.py",
    "find . -name '*.py' -exec grep -l foo {} +",
    "find . -name '*.py' -exec sed -i 's/a/b/' {} +",
    "find src -type f -exec wc -l {} +",
    "find . -name '*.txt' -exec cp {} /tmp/x \\;",
    "find . -iname '*.PY' -exec cat {} +",
]


@pytest.mark.parametrize("command", EVERYDAY_GLOBS)
def test_a_glob_skips_dotfiles_as_bash_does(tmp_path: Path, command: str) -> None:
    decision = _decide(tmp_path, command, "read(.env)")
    assert decision.action == "allow", decision.reason


@pytest.mark.parametrize(
    "command",
    [
        "cat .*",
        "cat .e*",
        "cat ./.e?v",
        "shopt -s dotglob; cat *",
        "shopt -s dotglob nullglob && grep -n x *",
        "GLOBIGNORE=x; cat *",
        "bash -O dotglob -c 'cat *'",
        "find . -type f -exec cat {} +",
        "find . -type f -exec wc -l {} +",
        "find . -name '.e*' -exec cat {} \\;",
        "find . -iname '.ENV' -exec cat {} +",
        "find . -name '*.py' -o -name '.env' -exec cat {} +",
        "find . ! -name '*.py' -exec cat {} +",
        "find . -exec sh -c 'cat \"$1\"' _ {} \\;",
        "find . -maxdepth 1 -exec cat {} +",
    ],
)
def test_a_glob_or_find_that_reaches_a_dotfile_is_refused(tmp_path: Path, command: str) -> None:
    decision = _decide(tmp_path, command, "read(.env)")
    assert decision.action == "deny", decision.reason
    assert ".env" in decision.reason


@pytest.mark.parametrize(
    "command",
    [
        "find . -name deploy -exec cp -r {} /tmp/x \\;",
        "find . -type d -exec tar czf /tmp/d.tgz {} +",
        "find . -name '*.env' -exec cat {} +",
    ],
)
def test_a_find_that_carries_or_reads_a_denied_file_is_refused(
    tmp_path: Path, command: str
) -> None:
    decision = _decide(tmp_path, command, "read(deploy/prod.env)")
    assert decision.action == "deny", decision.reason
    assert "deploy" in decision.reason


# -- 2. a changed glob is judged whole; find changes only what it selects ---------------

CLEANUPS = [
    "find . -name '*.pyc' -delete",
    "find . -name __pycache__ -exec rm -rf {} +",
    "find . -name __pycache__ -prune -exec rm -rf {} +",
    "rm -rf */__pycache__",
    "rm -rf */build",
    "sed -i 's/foo/bar/' */*.py",
    "cat > */x.txt",
]


@pytest.mark.parametrize(
    ("command", "rule"),
    [
        *(
            (command, rule)
            for command in CLEANUPS
            for rule in ("read(.env)", "read(deploy/prod.env)")
        ),
        # `sed -i ... */*.py` does change tests/test_a.py
        *((command, "edit(tests/**)") for command in CLEANUPS if not command.startswith("sed")),
    ],
)
def test_a_cleanup_that_misses_every_rule_runs(tmp_path: Path, command: str, rule: str) -> None:
    policy = _policy(tmp_path, rule)
    (policy.workspace / "src" / "__pycache__").mkdir()
    (policy.workspace / "src" / "__pycache__" / "a.pyc").write_text("")
    (policy.workspace / "src" / "b.pyc").write_text("")
    (policy.workspace / "src" / "build").mkdir()
    decision = policy.decide("bash", {"command": command})
    assert decision.action == "allow", decision.reason


@pytest.mark.parametrize(
    "command",
    [
        "find . -name '*.pyc' -delete",
        "find . -name __pycache__ -exec rm -rf {} +",
        "find tests -delete",
        "find . -delete",
        "find . -type f -delete",
        "find t* -name '*.pyc' -delete",
        "rm -rf */__pycache__",
        "rm -rf */*/*.pyc",
    ],
)
def test_a_cleanup_that_reaches_an_edit_denied_file_is_refused(
    tmp_path: Path, command: str
) -> None:
    policy = _policy(tmp_path, "edit(tests/**)")
    (policy.workspace / "tests" / "__pycache__").mkdir()
    (policy.workspace / "tests" / "__pycache__" / "t.pyc").write_text("")
    decision = policy.decide("bash", {"command": command})
    assert decision.action == "deny", decision.reason
    assert "edit(tests/**)" in decision.reason


@pytest.mark.parametrize(
    "command",
    [
        "find . -newer notes.txt -name '*.py' -delete",
        "find . -name '*.md' -o -name '*.py' -delete",
        "find . -path './tests/*' -exec rm {} +",
    ],
)
def test_a_find_whose_tests_are_not_judged_asks(tmp_path: Path, command: str) -> None:
    decision = _decide(tmp_path, command, "edit(tests/**)")
    assert decision.action == "ask", decision.reason
    assert "edit(tests/**)" in decision.reason


def test_a_dotfile_a_glob_cannot_match_is_not_judged_as_changed(tmp_path: Path) -> None:
    policy = _policy(tmp_path, "edit(.env)")
    assert policy.decide("bash", {"command": "rm -f *"}).action == "allow"
    for command in ("rm -f .*", "shopt -s dotglob; rm -f *", "find . -type f -delete"):
        decision = policy.decide("bash", {"command": command})
        assert decision.action == "deny", (command, decision.reason)


# -- 3. a copy into a glob-named folder --------------------------------------------------


@pytest.mark.parametrize(
    "command",
    [
        "cp src/a.py t*/",
        "mv src/a.py t*/",
        "cp -t t* src/a.py",
        "install src/a.py t*/",
        "cp -r src t*/",
        "cp src/a.py [t]ests/",
        "ln -s ../src/a.py t*/",
    ],
)
def test_a_copy_into_a_glob_named_folder_meets_the_edit_rule(tmp_path: Path, command: str) -> None:
    decision = _decide(tmp_path, command, "edit(tests/**)")
    assert decision.action == "deny", decision.reason
    assert "edit(tests/**)" in decision.reason


def test_a_copy_into_a_glob_named_folder_elsewhere_runs(tmp_path: Path) -> None:
    assert _decide(tmp_path, "cp notes.txt s*/", "edit(tests/**)").action == "allow"


# -- 4. input files named in an option's value -------------------------------------------


@pytest.mark.parametrize(
    "command",
    [
        "dd if=.env",
        "dd if=.env of=/tmp/out bs=1",
        "dd bs=1 if=./.env status=none",
        "xargs -a .env echo",
        "xargs -a.env echo",
        "xargs --arg-file=.env echo",
        "xargs --arg-file .env",
        "sudo dd if=deploy/prod.env",
    ],
)
def test_an_input_file_in_an_option_meets_a_read_rule(tmp_path: Path, command: str) -> None:
    decision = _decide(tmp_path, command, "read(.env)", "read(deploy/prod.env)")
    assert decision.action == "deny", decision.reason


@pytest.mark.parametrize("command", ["dd if=notes.txt of=/tmp/out", "xargs -a notes.txt echo"])
def test_other_input_files_still_run(tmp_path: Path, command: str) -> None:
    assert _decide(tmp_path, command, "read(.env)").action == "allow"
