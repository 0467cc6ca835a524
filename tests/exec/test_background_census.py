"""Each executor says when the command left processes running that had to be stopped:
the supervisor counts them unsandboxed; in bubblewrap and gVisor the PID namespace ends
with the command, and the census wrapper counts what is still in it first."""

from __future__ import annotations

import re
import time
from pathlib import Path

import pytest
from tests.sandboxes import needs

from lathe.exec.bwrap import BubblewrapExecutor, check_bubblewrap
from lathe.exec.gvisor import GvisorExecutor, check_gvisor
from lathe.exec.local import LocalExecutor


@pytest.fixture(
    params=[
        pytest.param(lambda ws: LocalExecutor(), id="supervised"),
        pytest.param(BubblewrapExecutor, id="bubblewrap",
                     marks=needs(check_bubblewrap(), "bubblewrap")),
        pytest.param(GvisorExecutor, id="gvisor", marks=needs(check_gvisor(), "gVisor")),
    ]
)  # fmt: skip
def executor(request, tmp_path: Path):
    return request.param(tmp_path)


# Where the census wrapper runs. Unsandboxed, the supervisor shares the command's group
# and a `kill 0` makes it stop the command (supervisor.py, not the wrapper).
@pytest.fixture(
    params=[
        pytest.param(BubblewrapExecutor, id="bubblewrap",
                     marks=needs(check_bubblewrap(), "bubblewrap")),
        pytest.param(GvisorExecutor, id="gvisor", marks=needs(check_gvisor(), "gVisor")),
    ]
)  # fmt: skip
def sandboxed(request, tmp_path: Path):
    return request.param(tmp_path)


async def _run(executor, command: str, cwd: Path, timeout: float = 60):
    return await executor.run(
        command, cwd=cwd, timeout=timeout, max_output_bytes=10_000, spill_dir=cwd / ".spill"
    )


async def test_jobs_left_running_are_counted_and_said(executor, tmp_path: Path) -> None:
    command = "sleep 300 > /dev/null & sleep 300 > /dev/null & sleep 0.2; echo started; exit 3"
    result = await _run(executor, command, tmp_path)
    assert result.exit_code == 3
    assert re.fullmatch(
        r"started\n\n\[lathe: the command exited but left 2 background processes running, "
        r"which were stopped [^\n]*: nothing a command starts outlives it\. Start, use and "
        r"stop a server or watcher in the same command\.\]\n",
        result.output,
    ), result.output


async def test_nothing_left_running_means_no_note(executor, tmp_path: Path) -> None:
    result = await _run(executor, "sleep 0.1 & wait; echo done; exit 4", tmp_path)
    assert (result.exit_code, result.output) == (4, "done\n")


async def test_a_command_killed_by_a_signal_reads_as_a_shell_does(executor, tmp_path) -> None:
    # The wrapper's sh would add "Killed" to the output; bash -c alone said nothing.
    result = await _run(executor, "echo going >&2; kill -KILL $$", tmp_path)
    assert (result.exit_code, result.output) == (137, "going\n")


async def test_a_timed_out_command_is_not_counted_twice(executor, tmp_path: Path) -> None:
    result = await _run(executor, "sleep 300 & echo started; wait", tmp_path, timeout=1.5)
    assert result.timed_out and result.output == "started\n"


async def test_stdin_is_still_empty(executor, tmp_path: Path) -> None:
    result = await _run(executor, 'cat; echo "read:$?"', tmp_path)
    assert result.output == "read:0\n"


@pytest.mark.parametrize("signal", ["TERM", "HUP"])
async def test_a_signal_to_the_whole_group_is_the_commands_to_handle(
    sandboxed, tmp_path: Path, signal: str
) -> None:
    # The census sh shares the command's process group in the sandboxes: `kill 0` killed
    # it, cutting the command short and reading as 143 (129 for HUP).
    command = f"trap 'echo got' {signal}; kill -{signal} 0; sleep 0.5; echo after; exit 3"
    result = await _run(sandboxed, command, tmp_path)
    assert (result.exit_code, result.output) == (3, "got\nafter\n")


async def test_a_signal_the_command_does_not_handle_still_ends_it(sandboxed, tmp_path) -> None:
    # The wrapper catches signals with a handler, not by ignoring them, which the
    # command would inherit.
    result = await _run(sandboxed, "kill -TERM 0; sleep 5; echo survived", tmp_path)
    assert (result.exit_code, result.output) == (143, "")


async def test_a_timeout_still_ends_the_command_promptly(executor, tmp_path: Path) -> None:
    started = time.monotonic()
    result = await _run(executor, "echo started; sleep 300", tmp_path, timeout=1.5)
    assert result.timed_out and result.output.startswith("started\n")
    assert time.monotonic() - started < 8
