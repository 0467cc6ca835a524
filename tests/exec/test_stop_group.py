"""lathe's one way to stop a process group: SIGTERM, a grace, then SIGKILL."""

from __future__ import annotations

import subprocess
import time
from pathlib import Path

from tests.tools.helpers import process_alive

from lathe.exec.supervision import signal_group, stop_group


def _start(script: str, pid_file: Path) -> subprocess.Popen:
    proc = subprocess.Popen(["bash", "-c", script], start_new_session=True)
    deadline = time.monotonic() + 10
    while not (pid_file.exists() and pid_file.read_text().strip()):
        assert time.monotonic() < deadline, "the group never started"
        time.sleep(0.01)
    return proc


def _dies(pid: int, within: float = 5.0) -> bool:
    """Whether `pid` is gone within `within` seconds: a signal to the group is sent to
    every process at once, but each takes its moment to die (longer on a busy machine)."""
    deadline = time.monotonic() + within
    while process_alive(pid):
        if time.monotonic() > deadline:
            return False
        time.sleep(0.01)
    return True


def test_a_group_that_ignores_sigterm_is_killed_after_the_grace(tmp_path) -> None:
    child = tmp_path / "child.pid"
    script = f"trap '' TERM; (trap '' TERM; sleep 300) & echo $! > {child}; wait"
    proc = _start(script, child)

    started = time.monotonic()
    stop_group(proc.pid, grace=0.5, gone=lambda: proc.poll() is not None)

    assert 0.5 <= time.monotonic() - started < 5
    assert proc.wait(timeout=5) == -9
    assert _dies(int(child.read_text()))


def test_a_group_that_ends_on_sigterm_is_not_kept_waiting(tmp_path) -> None:
    child = tmp_path / "child.pid"
    proc = _start(f"sleep 300 & echo $! > {child}; wait", child)

    started = time.monotonic()
    stop_group(proc.pid, grace=30, gone=lambda: proc.poll() is not None)

    assert time.monotonic() - started < 5
    assert proc.returncode is not None and _dies(int(child.read_text()))


def test_signalling_a_group_that_is_gone_says_so(tmp_path) -> None:
    proc = subprocess.Popen(["true"], start_new_session=True)
    proc.wait()
    assert signal_group(proc.pid, 0) is False
