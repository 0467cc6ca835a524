"""A command the guard cannot check is judged, never a crash of the run.

`Path.is_dir()` raises for errors other than "not there" (a name too long, a folder the
user may not enter): a `cd` to such a folder raised out of `analyze` and the gate, and
ended the whole run. Such a `cd` may fail, like one to a folder that is not there; and
any other OSError the guard meets becomes a deny that says it could not judge.
"""

from __future__ import annotations

import errno
from pathlib import Path

import pytest

from lathe.policy import command as command_module
from lathe.policy.command import analyze
from lathe.policy.gate import Mode, Policy
from lathe.policy.rules import RuleSet

WORKSPACE = Path("/home/dev/project")
HOME = Path("/home/dev")
LONG = "a" * 300


def _analyze(command: str):
    return analyze(command, workspace=WORKSPACE, home=HOME, environ={})


@pytest.mark.parametrize(
    "command",
    [
        f"cd {LONG} && ls",
        f"cd /tmp/{LONG}/b; ls",
        f"pushd {LONG}; ls",
        f"CDPATH=/tmp cd {LONG} && ls",
        f"CDPATH=/tmp:{LONG} cd x && ls",
    ],
)
def test_a_cd_to_a_name_too_long_is_judged(command: str) -> None:
    analysis = _analyze(command)  # raised OSError: [Errno 36] File name too long
    assert analysis.decision in ("allow", "ask"), analysis.reasons


def test_a_cd_that_may_fail_still_judges_the_folder_it_left() -> None:
    # The cd may fail (the name is too long), leaving the shell in the home folder.
    analysis = _analyze(f"cd ~; cd {LONG}; rm -rf *")
    assert analysis.decision == "deny", analysis.reasons
    assert any("home directory" in reason for reason in analysis.reasons)


def test_a_folder_the_user_may_not_enter_is_judged(monkeypatch: pytest.MonkeyPatch) -> None:
    # As a non-root user, `cd /root/proj` raised PermissionError from is_dir().
    real = Path.is_dir

    def is_dir(self: Path) -> bool:
        if str(self).startswith("/root/"):
            raise PermissionError(errno.EACCES, "Permission denied", str(self))
        return real(self)

    monkeypatch.setattr(Path, "is_dir", is_dir)
    assert _analyze("cd /root/proj && ls").decision in ("allow", "ask")
    assert _analyze("CDPATH=/root cd proj && ls").decision in ("allow", "ask")
    # Judged where the cd leads (outside the workspace): refused.
    assert _analyze("cd /root/proj && rm -rf build").decision == "deny"


def test_an_unexpected_os_error_is_a_deny_not_a_crash(monkeypatch: pytest.MonkeyPatch) -> None:
    def broken(*args: object, **kwargs: object) -> None:
        raise OSError(errno.EIO, "Input/output error")

    monkeypatch.setattr(command_module, "parse_script", broken)
    analysis = _analyze("ls")
    assert analysis.decision == "deny"
    assert "could not judge" in analysis.reasons[0]
    assert "Input/output error" in analysis.reasons[0]
    policy = Policy(Mode.FULL, RuleSet.from_strings(), WORKSPACE, HOME, sandboxed=False)
    assert policy.decide("bash", {"command": "ls"}).action == "deny"
