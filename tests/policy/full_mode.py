"""The guard as `--approval full` runs it, for a workspace in a made-up home folder: no
rule, no sandbox, so only the hard verdicts stand between a command and the machine."""

from __future__ import annotations

from pathlib import Path

from lathe.policy.gate import Mode, Policy
from lathe.policy.rules import RuleSet

WORKSPACE = Path("/home/dev/project")
HOME = Path("/home/dev")


def full_policy(workspace: Path = WORKSPACE, home: Path = HOME) -> Policy:
    return Policy(Mode.FULL, RuleSet.from_strings(), workspace, home, sandboxed=False)


def decide_in_full(command: str, workspace: Path = WORKSPACE, home: Path = HOME):
    return full_policy(workspace, home).decide("bash", {"command": command})
