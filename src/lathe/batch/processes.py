"""The processes of a batch's tasks: how each runs, and how a stopped batch ends them.

Two kinds. lathe itself and git (`run_process`) run as plain subprocesses with this
process's environment (lathe needs its key), in a process group of their own that dies
with this process. The task's own commands, its setup and its verify command
(`run_command`), run through one of lathe's executors (`lathe.exec`): the environment
commands get, without keys, and nothing they start outlives them, `setsid` included.

`stop_all` (Ctrl-C) kills both kinds and lets none start until `allow_tasks`.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import os
import signal
import subprocess
import tempfile
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

from lathe.exec.base import Executor

_RUNNING: set[int] = set()  # process groups of this process's tasks, for `stop_all`
_CANCELS: set[Callable[[], None]] = set()  # each cancels one `run_command`
_STOPPED = threading.Event()  # set by `stop_all`: no task starts another process
# Held while a process starts and is added to _RUNNING (or a command to _CANCELS), and
# while stop_all kills them: one started just after the check of _STOPPED would
# otherwise escape the kill.
_STARTING = threading.Lock()
_OUTPUT_BYTES = 64_000  # of a command's output kept (head and tail); results keep less


class Stopped(Exception):
    """The batch was stopped while this task ran: it ends without scoring."""


def stop_all() -> None:
    """Kill every task this process is running, and start no process for one until
    `allow_tasks` (a batch interrupted with Ctrl-C): each task then ends at once,
    without scoring, and removes its copy."""
    with _STARTING:
        _STOPPED.set()
        for group in list(_RUNNING):
            with contextlib.suppress(ProcessLookupError):
                os.killpg(group, signal.SIGKILL)
        for cancel in list(_CANCELS):
            cancel()


def allow_tasks() -> None:
    """Undo `stop_all`: a new batch in this process may start processes again."""
    _STOPPED.clear()


def stopped() -> bool:
    return _STOPPED.is_set()


def run_command(
    executor: Executor, command: str, cwd: Path, timeout: float, spill_dir: Path
) -> tuple[int | None, str]:
    """`command` through `executor`, from a thread with no event loop: its exit code
    (None when it timed out) and its output, stdout and stderr together. Raises
    `Stopped` when `stop_all` ends it, and what the executor raises (it cannot start)."""

    async def run() -> Any:
        task = asyncio.current_task()
        assert task is not None
        loop = asyncio.get_running_loop()

        def cancel() -> None:
            with contextlib.suppress(RuntimeError):  # the loop has closed: it ended anyway
                loop.call_soon_threadsafe(task.cancel)

        with _STARTING:
            if _STOPPED.is_set():
                raise Stopped
            _CANCELS.add(cancel)
        try:
            return await executor.run(
                command, cwd=cwd, timeout=timeout, max_output_bytes=_OUTPUT_BYTES,
                spill_dir=spill_dir,
            )  # fmt: skip
        finally:
            _CANCELS.discard(cancel)
            close = getattr(executor, "aclose", None)  # a container ends with its command
            if close is not None:
                await close()

    try:
        result = asyncio.run(run())
    except asyncio.CancelledError:  # the executor killed what ran before it re-raised
        raise Stopped from None
    return result.exit_code, result.output


def run_process(
    argv: list[str],
    cwd: Path,
    timeout: float,
    *,
    stdin: str | None = None,
    env: dict[str, str] | None = None,
) -> tuple[int | None, str, str, bool]:
    """Run in a process group of its own until its first process exits (its exit code)
    or `timeout` passes (then killed is True); either way the whole group is killed
    then, so a process it left in the background neither holds the result back nor
    outlives it. The group also dies with this process (PR_SET_PDEATHSIG), so a batch
    killed with -9 leaves no task running. Output goes through files, not pipes, for
    the same reason: nothing waits for a background process to close them. `env`: its
    environment, when not this process's."""
    _prctl()
    with tempfile.TemporaryFile() as out_file, tempfile.TemporaryFile() as err_file:
        with _STARTING:
            if _STOPPED.is_set():
                raise Stopped
            process = subprocess.Popen(
                argv, cwd=cwd, stdin=subprocess.PIPE if stdin is not None else subprocess.DEVNULL,
                stdout=out_file, stderr=err_file, start_new_session=True, env=env,
                preexec_fn=_die_with_parent,
            )  # fmt: skip
            _RUNNING.add(process.pid)
        killed = False
        try:
            if stdin is not None:
                assert process.stdin is not None
                with contextlib.suppress(BrokenPipeError):
                    process.stdin.write(stdin.encode("utf-8"))
                    process.stdin.close()
            try:
                code: int | None = process.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                code, killed = None, True
        finally:
            _RUNNING.discard(process.pid)
            with contextlib.suppress(ProcessLookupError):
                os.killpg(process.pid, signal.SIGKILL)
            process.wait()
        return code, _read(out_file), _read(err_file), killed


def _read(file: Any) -> str:
    file.seek(0)
    return file.read().decode("utf-8", "replace")


@functools.cache
def _prctl() -> Any:
    """libc's prctl, looked up here: the child of a threaded process must not dlopen."""
    import ctypes

    return ctypes.CDLL(None, use_errno=True).prctl


def _die_with_parent() -> None:
    with contextlib.suppress(Exception):
        _prctl()(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
