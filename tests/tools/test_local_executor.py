"""LocalExecutor: real processes, bounded output, and no process outliving its run."""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import psutil
import pytest
from tests.tools.helpers import process_alive

from lathe.exec.base import ExecutorUnavailable
from lathe.exec.local import LocalExecutor


async def _run(command: str, tmp_path: Path, **kwargs: object) -> object:
    options: dict[str, object] = {
        "cwd": tmp_path,
        "timeout": 10.0,
        "max_output_bytes": 10_000,
        "spill_dir": tmp_path / "spill",
    }
    options.update(kwargs)
    executor = options.pop("executor", LocalExecutor())
    return await executor.run(command, **options)  # type: ignore[attr-defined]


async def _wait_gone(pid: int, within: float = 10.0) -> bool:
    """Whether `pid` is gone within `within` seconds: dying takes a moment after the
    signal, and on a busy machine (four test workers on two cores) more than 3 s."""
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        if not process_alive(pid):
            return True
        await asyncio.sleep(0.05)
    return not process_alive(pid)


async def test_exit_code_and_merged_output(tmp_path: Path) -> None:
    result = await _run("echo out; echo err >&2; exit 3", tmp_path)
    assert (result.exit_code, result.output, result.timed_out, result.truncated) == (
        3,
        "out\nerr\n",
        False,
        False,
    )
    assert result.full_output_path is None


async def test_runs_in_cwd_with_a_noninteractive_environment(tmp_path: Path) -> None:
    executor = LocalExecutor(env={"LATHE_TEST_VAR": "yes"})
    result = await _run(
        'pwd; echo "$GIT_TERMINAL_PROMPT $PAGER $GIT_PAGER $TERM $LATHE_TEST_VAR"',
        tmp_path,
        executor=executor,
    )
    assert result.output == f"{tmp_path}\n0 cat cat dumb yes\n"


async def test_a_command_reading_stdin_returns_at_once(tmp_path: Path) -> None:
    started = time.monotonic()
    result = await _run('cat; read -r line; echo "read:$?"', tmp_path)
    assert result.output == "read:1\n"
    assert time.monotonic() - started < 5


async def test_invalid_utf8_is_replaced(tmp_path: Path) -> None:
    result = await _run(r"printf 'ok \377\n'", tmp_path)
    assert result.output == "ok \ufffd\n"


async def test_death_by_signal_reads_like_a_shell_exit_code(tmp_path: Path) -> None:
    result = await _run("kill -KILL $$", tmp_path)
    assert result.exit_code == 137


async def test_fifty_megabytes_stay_bounded_and_spill_whole(tmp_path: Path) -> None:
    started = time.monotonic()
    lines = 3_000_000  # 17 bytes each: 51 MB
    result = await _run(f"yes 0123456789abcdef | head -n {lines}", tmp_path, timeout=60)
    assert result.exit_code == 0
    assert result.truncated
    assert len(result.output) < 10_000 + 200
    assert result.output.startswith("0123456789abcdef\n")
    assert result.output.endswith("0123456789abcdef\n")
    assert "bytes omitted ...]" in result.output
    spill = result.full_output_path
    assert spill is not None and spill.parent == tmp_path / "spill"
    assert spill.stat().st_size == 17 * lines
    with spill.open("rb") as handle:
        assert handle.read(34) == b"0123456789abcdef\n" * 2
    assert time.monotonic() - started < 30


async def test_output_just_under_the_limit_is_not_truncated(tmp_path: Path) -> None:
    result = await _run("head -c 10000 /dev/zero | tr '\\0' x", tmp_path)
    assert not result.truncated and len(result.output) == 10_000
    assert not (tmp_path / "spill").exists()


async def test_timeout_kills_the_whole_group_grandchildren_included(tmp_path: Path) -> None:
    pid_file = tmp_path / "pid"
    started = time.monotonic()
    result = await _run(
        f"sleep 300 & echo $! > {pid_file}; echo started; wait", tmp_path, timeout=1
    )
    assert time.monotonic() - started < 6
    assert (result.timed_out, result.exit_code, result.output) == (True, None, "started\n")
    assert await _wait_gone(int(pid_file.read_text()))


async def test_a_grandchild_ignoring_sigterm_is_killed(tmp_path: Path) -> None:
    pid_file = tmp_path / "pid"
    executor = LocalExecutor(kill_grace_s=0.3)
    result = await _run(
        f"bash -c 'trap \"\" TERM; sleep 300' & echo $! > {pid_file}; wait",
        tmp_path,
        timeout=1,
        executor=executor,
    )
    assert result.timed_out
    assert await _wait_gone(int(pid_file.read_text()))


async def test_a_background_grandchild_holding_stdout_does_not_hang(tmp_path: Path) -> None:
    pid_file = tmp_path / "pid"
    started = time.monotonic()
    result = await _run(f"sleep 300 & echo $! > {pid_file}; echo done", tmp_path, timeout=60)
    assert time.monotonic() - started < 6
    assert result.exit_code == 0 and not result.timed_out
    assert result.output.startswith("done\n")
    assert "left 1 background process running" in result.output
    assert not process_alive(int(pid_file.read_text()))


def _in_own_session(pid_file: Path, then: str = "exec sleep 300") -> str:
    """Start a grandchild in a session of its own (out of the command's process group and
    off its output pipe) that writes its pid to `pid_file`."""
    return f"setsid bash -c 'echo $$ > {pid_file}; {then}' > /dev/null 2>&1 &"


def _until_written(pid_file: Path) -> str:
    return f"while [ ! -s {pid_file} ]; do sleep 0.01; done"


def _recorded_pids(*pid_files: Path) -> list[int]:
    return [int(f.read_text()) for f in pid_files if f.exists() and f.read_text().strip()]


def _kill_survivors(*pid_files: Path) -> None:
    for pid in _recorded_pids(*pid_files):
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)


@pytest.mark.parametrize(
    "start",
    [
        pytest.param(lambda f: _in_own_session(f), id="setsid"),
        pytest.param(lambda f: f"nohup sleep 300 > /dev/null 2>&1 & echo $! > {f}", id="nohup"),
        pytest.param(lambda f: f"sleep 300 > /dev/null 2>&1 & echo $! > {f}", id="redirected"),
        pytest.param(lambda f: _in_own_session(f, 'trap "" TERM HUP; sleep 300'), id="deaf"),
    ],
)
async def test_background_jobs_stop_when_the_command_ends(tmp_path: Path, start) -> None:
    pid_file = tmp_path / "pid"
    executor = LocalExecutor(kill_grace_s=0.5)
    try:
        result = await _run(
            f"{start(pid_file)}\n{_until_written(pid_file)}; echo ran",
            tmp_path,
            executor=executor,
        )
        assert (result.exit_code, result.timed_out) == (0, False)
        assert result.output.startswith("ran\n")
        assert "left 1 background process running" in result.output
        assert not process_alive(int(pid_file.read_text()))
    finally:
        _kill_survivors(pid_file)


async def test_a_command_that_leaves_nothing_gets_no_note(tmp_path: Path) -> None:
    result = await _run("sleep 0.1 & wait; echo ok", tmp_path)
    assert (result.exit_code, result.output) == (0, "ok\n")


async def test_signals_a_command_sends_its_own_group_do_not_end_it_early(tmp_path: Path) -> None:
    # SIGUSR1 is how lathe asks the supervisor to kill at once; only lathe's counts.
    result = await _run(
        "trap '' USR1 HUP; kill -USR1 0; kill -HUP 0; sleep 0.6; echo still", tmp_path
    )
    assert (result.exit_code, result.output) == (0, "still\n")


async def test_a_timeout_stops_a_grandchild_in_its_own_session(tmp_path: Path) -> None:
    pid_file = tmp_path / "pid"
    try:
        result = await _run(f"{_in_own_session(pid_file)} wait", tmp_path, timeout=1)
        assert (result.timed_out, result.exit_code) == (True, None)
        assert not process_alive(int(pid_file.read_text()))
    finally:
        _kill_survivors(pid_file)


async def test_cancelling_stops_a_grandchild_in_its_own_session(tmp_path: Path) -> None:
    pid_file = tmp_path / "pid"
    task = asyncio.create_task(_run(f"{_in_own_session(pid_file)} wait", tmp_path, timeout=60))
    try:
        while not _recorded_pids(pid_file):
            await asyncio.sleep(0.02)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        assert await _wait_gone(int(pid_file.read_text()))
    finally:
        _kill_survivors(pid_file)


async def test_a_cancellation_holds_even_if_the_supervisor_dies_right_after(
    tmp_path: Path,
) -> None:
    # An event loop that closes finalises a running process's transport with SIGKILL:
    # cancelling must not leave the setsid grandchild to the supervisor alone.
    pid_file = tmp_path / "pid"
    task = asyncio.create_task(_run(f"{_in_own_session(pid_file)} wait", tmp_path, timeout=60))
    try:
        while not _recorded_pids(pid_file):
            await asyncio.sleep(0.02)
        ancestors = psutil.Process(int(pid_file.read_text())).parents()
        supervisor = next(p for p in ancestors if "supervisor.py" in " ".join(p.cmdline()))
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        with contextlib.suppress(psutil.NoSuchProcess):  # it may have gone already
            supervisor.kill()
        assert await _wait_gone(int(pid_file.read_text()))
    finally:
        _kill_survivors(pid_file)


RUNNER = """
import asyncio, sys
from pathlib import Path
from lathe.exec.local import LocalExecutor

workspace = Path(sys.argv[1])
asyncio.run(LocalExecutor().run(
    sys.argv[2], cwd=workspace, timeout=300, max_output_bytes=1000, spill_dir=workspace
))
"""


def test_nothing_a_command_started_outlives_lathe_killed_with_sigkill(tmp_path: Path) -> None:
    child, grandchild = tmp_path / "child.pid", tmp_path / "grandchild.pid"
    command = f"sleep 300 & echo $! > {child}; {_in_own_session(grandchild)} wait"
    runner = subprocess.Popen([sys.executable, "-c", RUNNER, str(tmp_path), command])
    try:
        deadline = time.monotonic() + 30
        while len(_recorded_pids(child, grandchild)) < 2:
            assert time.monotonic() < deadline and runner.poll() is None
            time.sleep(0.02)
        runner.kill()
        runner.wait()
        deadline = time.monotonic() + 5
        while any(process_alive(p) for p in _recorded_pids(child, grandchild)):
            assert time.monotonic() < deadline, "a process the command started outlived lathe"
            time.sleep(0.05)
    finally:
        runner.kill()
        _kill_survivors(child, grandchild)


async def test_cancelling_the_run_kills_the_group_and_reraises(tmp_path: Path) -> None:
    pid_file = tmp_path / "pid"
    task = asyncio.create_task(
        _run(f"sleep 300 & echo $! > {pid_file}; wait", tmp_path, timeout=60)
    )
    while not pid_file.exists() or not pid_file.read_text().strip():
        await asyncio.sleep(0.02)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert await _wait_gone(int(pid_file.read_text()))


async def test_argv_builder_decides_what_runs(tmp_path: Path) -> None:
    seen: list[tuple[str, Path]] = []

    def builder(command: str, cwd: Path) -> list[str]:
        seen.append((command, cwd))
        return ["env", "WRAPPED=1", "bash", "-c", command]

    result = await _run("echo $WRAPPED", tmp_path, executor=LocalExecutor(argv_builder=builder))
    assert result.output == "1\n"
    assert seen == [("echo $WRAPPED", tmp_path)]


async def test_a_program_that_cannot_start_is_executor_unavailable(tmp_path: Path) -> None:
    executor = LocalExecutor(argv_builder=lambda command, cwd: ["/nonexistent/bwrap", command])
    with pytest.raises(ExecutorUnavailable, match="cannot start '/nonexistent/bwrap'"):
        await _run("true", tmp_path, executor=executor)


def test_a_command_holding_a_nul_byte_is_refused_and_leaves_no_descriptor_open(tmp_path):
    # Popen's ValueError went past the `except OSError` that closes the output pipes:
    # two descriptors lost per call.
    def open_descriptors() -> int:
        return len(os.listdir("/proc/self/fd"))

    before = open_descriptors()
    for _ in range(3):
        with pytest.raises(ExecutorUnavailable, match="NUL byte"):
            asyncio.run(_run("echo a\0b", tmp_path))
    assert open_descriptors() == before
