"""What the bubblewrap probe says when the sandbox cannot start: the fix for what bwrap
reported. A bwrap that started its sandbox but found no `true` in it (a PATH naming no
folder the sandbox shows) was blamed on user namespaces, and the user was sent to sysctl
settings that were fine."""

from __future__ import annotations

import shlex
import shutil
from pathlib import Path

from tests.sandboxes import needs

from lathe.exec.bwrap import check_bubblewrap

_BWRAP = shutil.which("bwrap")


def _fake_bwrap(tmp_path: Path, says: str) -> str:
    fake = tmp_path / "bwrap"
    fake.write_text(f"#!/bin/sh\necho {shlex.quote(says)} >&2\nexit 1\n")
    fake.chmod(0o755)
    return str(fake)


@needs(check_bubblewrap(), "bubblewrap")
def test_a_program_missing_in_the_sandbox_is_not_blamed_on_namespaces(monkeypatch) -> None:
    monkeypatch.setenv("PATH", "/nowhere")

    status = check_bubblewrap(str(_BWRAP))

    assert status.available is False
    assert "bwrap: execvp sh: No such file or directory" in status.message
    assert "user namespaces" not in status.message
    assert "sysctl" not in status.message
    assert "PATH" in status.message  # what to look at instead


def test_an_unknown_failure_says_what_bwrap_said_and_no_namespace_advice(tmp_path) -> None:
    status = check_bubblewrap(_fake_bwrap(tmp_path, "bwrap: Can't find source path /x: Bad"))

    assert status.available is False
    assert "bwrap: Can't find source path /x: Bad" in status.message
    assert "sysctl" not in status.message


def test_a_namespace_failure_still_gets_the_namespace_advice(tmp_path) -> None:
    says = "bwrap: setting up uid map: Permission denied"

    status = check_bubblewrap(_fake_bwrap(tmp_path, says))

    assert says in status.message
    assert "kernel.unprivileged_userns_clone=1" in status.message
