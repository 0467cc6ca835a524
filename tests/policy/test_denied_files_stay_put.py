"""A file a read rule denies must not leave the rule's reach under a new name. The
sandbox masks it only within the one command: `mv deploy d2` moved the folder holding
`deploy/prod.env`, and the next call read `d2/prod.env`."""

from __future__ import annotations

from pathlib import Path

import pytest

from lathe.policy.gate import Mode, Policy
from lathe.policy.rules import RuleSet

RULE = "read(deploy/prod.env)"


def _policy(ws: Path, mode: str = "auto") -> Policy:
    return Policy(
        mode=Mode(mode),
        rules=RuleSet.from_strings(allow=(), ask=(), deny=[RULE]),
        workspace=ws,
        home=Path.home(),
        sandboxed=mode != "full",
    )


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    (tmp_path / "deploy").mkdir()
    (tmp_path / "deploy" / "prod.env").write_text("DB_PASSWORD=hunter2\n")
    (tmp_path / "deploy" / "run.sh").write_text("echo hi\n")
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "app.py").write_text("x = 1\n")
    return tmp_path


@pytest.mark.parametrize("mode", ["auto", "full"])
@pytest.mark.parametrize(
    "command",
    [
        "mv deploy d2",
        "mv deploy/ d2",
        "mv ./deploy d2",
        "cd deploy && mv . ../d2",
        "cp -r deploy d2",
        "cp -a deploy d2",
        "rsync -a deploy/ d2/",
        "tar czf out.tgz deploy",
        "zip -r out.zip deploy",
        "ln -s deploy d2",
        "git mv deploy d2",
        "rename deploy d2 deploy",
        "mv deploy/* d2/",  # a glob naming the file itself
        "cat dep*/prod.env",
    ],
)
def test_carrying_off_a_folder_that_holds_a_denied_file_is_refused(ws, command, mode):
    decision = _policy(ws, mode).decide("bash", {"command": command})

    assert decision.action == "deny", decision
    assert "deploy/prod.env" in decision.reason, decision.reason


def test_the_refusal_names_the_rule(ws):
    decision = _policy(ws).decide("bash", {"command": "mv deploy d2"})

    assert RULE in decision.reason and decision.brief == RULE, decision


@pytest.mark.parametrize(
    "command",
    [
        "ls",
        "ls deploy",
        "cd deploy && ls",
        "git status",
        "pytest",
        "pytest -q .",
        "mv src lib",
        "cp -r src lib",
        "tar czf out.tgz src",
        "mv deploy/run.sh deploy/start.sh",
        "tar czf out.tgz .",  # the workspace root holds everything: not judged so
    ],
)
def test_commands_that_leave_it_where_it_is_still_run(ws, command):
    assert _policy(ws).decide("bash", {"command": command}).action == "allow", command
