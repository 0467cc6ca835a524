"""How a command the model ran is read as evidence of the tests (`evidence.evidence_of`)
and split at its control operators (`evidence.shell_parts`)."""

from __future__ import annotations

import pytest

from lathe.agent.evidence import evidence_of, shell_parts

FAILED = "F\n1 failed in 0.01s\n"
PASSED = ".\n1 passed in 0.01s\n"


@pytest.mark.parametrize(
    ("command", "parts"),
    [
        ("pytest -q 2>&1 | tail -3", [("pytest -q 2>&1", "|"), ("tail -3", "")]),
        ("pytest -k 'a;b' &>log", [("pytest -k 'a;b' &>log", "")]),
        ('pytest -k "x\\"|y"', [('pytest -k "x\\"|y"', "")]),
        ("echo $(ls; pwd) && pytest", [("echo $(ls; pwd)", "&&"), ("pytest", "")]),
        ("(cd pkg && pytest) || true", [("cd pkg", "&&"), ("pytest", "||"), ("true", "")]),
        ("{ pytest; }", [("pytest", ";"), ("", "")]),
        ("pytest &", [("pytest", "&"), ("", "")]),
        ("a\\;b\npytest |& cat", [("a\\;b", "\n"), ("pytest", "|&"), ("cat", "")]),
    ],
)
def test_a_command_splits_at_its_operators_not_inside_quotes_or_redirects(command, parts):
    assert shell_parts(command) == parts


@pytest.mark.parametrize(
    ("command", "exit_code", "output", "judged", "doubt"),
    [
        ("pytest -q", 1, FAILED, 1, ""),
        ("pip install -e . && pytest -q", 0, PASSED, 0, ""),
        ("cd pkg && pytest -q && echo ok", 0, PASSED, 0, ""),
        ("set -euo pipefail; pytest -q | tail -3", 1, FAILED, 1, ""),
        ("pytest -q | tail -3", 0, FAILED, 1, "a pipe after it"),
        ("pytest -q || true", 0, FAILED, 1, "`||` after it"),
        ("pytest -q; echo done", 0, PASSED, 0, "a command after it"),
        ("pytest -q &", 0, "", None, "it ran in the background"),
        # A failing summary anywhere counts, as for the verify gate.
        ("pytest -q | cat", 0, FAILED + PASSED, 1, "a pipe after it"),
        ("pytest -q > /dev/null; echo done", 0, "done\n", None, "is unclear"),
        # A conftest zeroed the exit status after a test failed.
        ("pytest -q", 0, FAILED, 1, "exited 0, but its output reports 1 failing"),
    ],
)
def test_the_exit_code_is_the_runners_or_read_from_its_counts(
    command, exit_code, output, judged, doubt
):
    judgement = evidence_of(command, exit_code, output)
    assert judgement is not None
    evidence, why = judgement
    assert evidence is not None and evidence.exit_code == judged
    assert doubt in why and bool(doubt) == bool(why)


@pytest.mark.parametrize(
    "command",
    ["pytest -q && sed -i s/a/b/ calc.py", "pytest -q | tee calc.py", "pytest; python fix.py"],
)
def test_a_change_after_the_runner_in_the_same_command_leaves_no_evidence(command):
    assert evidence_of(command, 0, PASSED) == (None, "")


@pytest.mark.parametrize(
    "command",
    ["cargo test -- --list", "python -m pytest --version", "pytest --collect-only -q",
     "mypy --help", "ls && cat pytest.ini", "pip install pytest"],
)  # fmt: skip
def test_a_command_that_runs_no_tests_is_no_evidence(command):
    assert evidence_of(command, 0, PASSED) is None
