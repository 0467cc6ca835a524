"""Lathe's side of the supervisor (`supervisor.py`): how to start a command under it, how
to stop it from a cancelled run, and what it reported.

    with Supervision(argv, timeout=10, grace=2) as supervision:
        process = start(supervision.argv, pass_fds=supervision.pass_fds,
                        start_new_session=True)   # its own session and process group
        supervision.spawned()
        ...                                        # wait for the process to exit
        report = supervision.report()

The supervisor enforces the timeout itself, so a command that ends just before it while
a background job takes the grace to stop is not reported as timed out. A caller that
stops waiting anyway (`backstop_s` passed, or it was cancelled) calls `kill_now`, which
cannot wait either. It asks the supervisor to SIGKILL the whole tree, and SIGKILLs every
descendant of the supervisor it can see itself too: the supervisor may not live to do
it, since an event loop that closes (Ctrl-C ending lathe) finalises the transport of a
still-running process with SIGKILL. The process group is SIGKILLed only when the
supervisor is already gone — SIGKILL to the group first would take the supervisor with
it and leave its `setsid` descendants behind.

It also holds lathe's one way to stop a process group it did not start under the
supervisor (the sandbox's bwrap, the local model server): `stop_group` — SIGTERM, a
grace, then SIGKILL — and `signal_group`, which every other signal to a group goes
through.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import importlib.util
import os
import signal
import sys
import time
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType
from typing import Protocol

from lathe.exec.base import ExecutorUnavailable

_SUPERVISOR = Path(__file__).with_name("supervisor.py")
# What the supervisor may take beyond the timeout and the grace before lathe stops
# waiting for it: its own start, and processes slow to die (it gives up after 5 s).
_BACKSTOP_SLACK_S = 10.0
KILL_WAIT_S = 5.0  # after SIGKILL: a process stuck in the kernel (D state) may linger
_POLL_S = 0.02


class _Started(Protocol):
    pid: int

    @property
    def returncode(self) -> int | None: ...


@dataclass(frozen=True)
class Report:
    """What the supervisor said before it exited (`lost` when it said nothing: killed)."""

    reason: str  # exited, timeout, stopped, killed, orphaned, error or lost
    exit_code: int | None  # the command's, as a shell reports it (143: stopped by SIGTERM)
    stopped: int  # processes still running when the command exited, which it stopped
    error: str | None = None  # why the command could not start (the OS's words)

    @property
    def timed_out(self) -> bool:
        return self.reason == "timeout"


class Supervision:
    """One command started under the supervisor. `env` is the environment the process
    gets (None: lathe's own); the supervisor hands it to the command unchanged."""

    def __init__(
        self,
        argv: list[str],
        *,
        timeout: float,
        grace: float,
        env: Mapping[str, str] | None = None,
    ) -> None:
        lc_ctype = (os.environ if env is None else env).get("LC_CTYPE")
        options = [
            f"parent={os.getpid()}", f"timeout={max(0.0, timeout)!r}", f"grace={grace!r}",
            f"psutil={_psutil_dir()}", *([f"lc_ctype={lc_ctype}"] if lc_ctype is not None else []),
        ]  # fmt: skip
        self._read_fd, self._write_fd = os.pipe()
        options.append(f"status={self._write_fd}")
        self.argv = [sys.executable, "-I", "-S", str(_SUPERVISOR), *options, "--", *argv]
        self.pass_fds: tuple[int, ...] = (self._write_fd,)
        self.backstop_s = max(0.0, timeout) + grace + _BACKSTOP_SLACK_S

    def __enter__(self) -> Supervision:
        return self

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()

    def close(self) -> None:
        """Release both ends of the status pipe (idempotent)."""
        self.spawned()
        self._close_read()

    def spawned(self) -> None:
        """Close lathe's copy of the status pipe, so its end means the supervisor's end."""
        if self._write_fd >= 0:
            os.close(self._write_fd)
            self._write_fd = -1

    def kill_now(self, process: _Started) -> None:
        """SIGKILL everything the command started, without waiting (see the module)."""
        if process.returncode is None:
            with contextlib.suppress(ProcessLookupError):
                os.kill(process.pid, signal.SIGUSR1)
                _kill_descendants(process.pid)
                return
        signal_group(process.pid, signal.SIGKILL)

    def report(self) -> Report:
        """Once the supervisor has exited: its last word (never blocks)."""
        data = b""
        if self._read_fd >= 0:
            os.set_blocking(self._read_fd, False)
            with contextlib.suppress(BlockingIOError):  # a leaked writer still holds it
                data = os.read(self._read_fd, 65536)
            self._close_read()
        lines = data.decode("utf-8", "replace").splitlines()
        match lines[-1].split(" ", 1) if lines else []:
            case ["error", message]:
                return Report("error", None, 0, message)
            case ["done", rest]:
                code, stopped, reason = rest.split()
                return Report(reason, int(code), int(stopped))
            case _:
                return Report("lost", None, 0)

    def _close_read(self) -> None:
        if self._read_fd >= 0:
            os.close(self._read_fd)
            self._read_fd = -1


def pid_alive(pid: int) -> bool:
    """Whether a process `pid` lives (another user's too); an exited child of this
    process is reaped first, or `kill(pid, 0)` would see its zombie. A pid below 1 names
    no process: False, never asked, since kill and waitpid read it as a group (0: this
    process's own) or as every process and any child."""
    if pid < 1:
        return False
    with contextlib.suppress(ChildProcessError, OSError):
        if os.waitpid(pid, os.WNOHANG)[0] == pid:
            return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def signal_group(pgid: int, sig: int) -> bool:
    """Send `sig` to the process group `pgid`; False when no process of it is left. When
    lathe may not signal some member, the leader (`pgid` itself) still gets it. A `pgid`
    below 1 raises ValueError: killpg would read 0 as lathe's own group."""
    if pgid < 1:
        raise ValueError(f"{pgid} is not a process group")
    try:
        os.killpg(pgid, sig)
    except ProcessLookupError:
        return False
    except PermissionError:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(pgid, sig)
    return True


def stop_group(
    pgid: int, *, grace: float, gone: Callable[[], bool], kill_wait: float = KILL_WAIT_S
) -> None:
    """Stop the process group `pgid`: SIGTERM, up to `grace` seconds for `gone()` to say
    it ended, then SIGKILL — always, since a grandchild may ignore SIGTERM or have left
    what `gone` watches — and up to `kill_wait` seconds more. Returns early once the
    group has no process left. Blocks: from the event loop, run it in a thread."""
    for sig, wait in ((signal.SIGTERM, grace), (signal.SIGKILL, kill_wait)):
        if not signal_group(pgid, sig):
            return
        deadline = time.monotonic() + wait
        while not gone() and time.monotonic() < deadline:
            time.sleep(_POLL_S)


async def reaped_after_kill(exited: Awaitable[object], seconds: float = 2.0) -> None:
    """After `kill_now`, wait briefly for the process to be reaped (`exited`: its wait),
    so its transport closes while the event loop runs — else it is collected after the
    loop closed, with a warning. A second cancellation, or a slow death, cuts it short."""
    with contextlib.suppress(BaseException):
        await asyncio.wait_for(asyncio.shield(exited), seconds)


def _kill_descendants(pid: int) -> None:
    """SIGKILL what runs below `pid`, not `pid` itself: the supervisor, as subreaper,
    still reaps them and kills whatever they fork meanwhile."""
    import psutil  # only here, on a cancellation: about 20 ms

    try:
        below = psutil.Process(pid).children(recursive=True)
    except psutil.Error:
        return
    for process in below:
        with contextlib.suppress(psutil.Error):
            process.kill()


def supervised(argv: list[str], *, lc_ctype: str | None = None, grace: float = 2.0) -> list[str]:
    """`argv` run under the supervisor for as long as it lives (no timeout, no status
    line), by a process lathe starts itself (an MCP server over stdio): when it exits,
    or lathe does, whatever it started is stopped too. Its stdio is the command's.
    `lc_ctype`: the LC_CTYPE the command's environment sets (the supervisor drops the
    one its interpreter may have coerced, and puts this one back)."""
    options = [
        f"parent={os.getpid()}", "timeout=inf", f"grace={grace!r}", f"psutil={_psutil_dir()}",
        "status=-", *([f"lc_ctype={lc_ctype}"] if lc_ctype is not None else []),
    ]  # fmt: skip
    return [sys.executable, "-I", "-S", str(_SUPERVISOR), *options, "--", *argv]


@functools.cache
def _psutil_dir() -> str:
    """Where psutil is installed; the supervisor starts without site-packages."""
    spec = importlib.util.find_spec("psutil")
    if spec is None or not spec.submodule_search_locations:
        raise ExecutorUnavailable(
            "psutil is not installed, and lathe needs it to stop what commands leave "
            "running: pip install 'psutil>=5.9'"
        )
    return str(Path(next(iter(spec.submodule_search_locations))).parent)
