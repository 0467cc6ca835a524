"""Run shell commands on this machine, following the contract in `lathe.exec.base`.

The process and output handling is independent of the argv: `argv_builder` turns a
command string and a working directory into the program to start, so a sandboxing
executor reuses everything here by prefixing its own arguments.

Nothing a command starts may outlive it, its timeout or lathe. By default each command
runs under the supervisor (`supervisor.py`, see `supervision.py`): a child subreaper
that hears when lathe dies and stops the whole tree it sees, `setsid` and double-forked
descendants included, which a process group cannot reach. How a supervised run ends:
- the command exits: whatever it left running, background jobs included, gets SIGTERM,
  up to `kill_grace_s` to go, then SIGKILL, and a note in the output says so — the same
  end as in the sandbox, where the PID namespace goes with the command;
- the timeout passes: the whole tree is stopped the same way; `exit_code` is None and
  `timed_out` True;
- the awaiting task is cancelled: the supervisor is told to SIGKILL the tree at once
  (the process group, if the supervisor is already gone), then CancelledError;
- lathe dies, even by SIGKILL: the supervisor stops the tree.

`supervise=False` is for an argv that contains the tree itself (bubblewrap's PID
namespace, --die-with-parent): lathe then signals the process group. A command that
exits while a background grandchild still holds the pipe gets `linger_s` for the pipe
to close before the group is stopped; a timeout is SIGTERM to the group, `kill_grace_s`,
SIGKILL; a cancellation is SIGKILL to the group at once.

A sandbox whose PID namespace ends with the command stops what it left running without
a word, and the model's next command failed on a file a background job never wrote. So
a sandbox runs `census_argv(command)` inside and `census=True` here: a wrapper that,
once the command exits, counts the processes still running in the namespace, for the
same note the supervisor's count gives.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import tempfile
import time
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from lathe.exec.base import ExecResult, ExecutorUnavailable
from lathe.exec.env import command_environment
from lathe.exec.output import _OutputSink
from lathe.exec.supervision import Supervision, reaped_after_kill, signal_group, stop_group

ArgvBuilder = Callable[[str, Path], list[str]]

# Commands must never wait for a human: no credential prompts, no pagers, no editors.
NONINTERACTIVE_ENV: Mapping[str, str] = {
    "GIT_TERMINAL_PROMPT": "0",
    "GIT_EDITOR": "true",
    "GIT_PAGER": "cat",
    "PAGER": "cat",
    "MANPAGER": "cat",
    "TERM": "dumb",
    "NO_COLOR": "1",
    "DEBIAN_FRONTEND": "noninteractive",
    "PIP_NO_INPUT": "1",
}

_EOF_AFTER_KILL_S = 2.0  # a process that escaped the group may keep the pipe open
_REAP_AFTER_KILL_S = 5.0


def bash_argv(command: str, cwd: Path) -> list[str]:
    return ["bash", "-c", command]


# Runs the command (its stdin /dev/null, as everywhere), then counts the processes still
# running in the PID namespace but its init (pid 1) and itself, zombies aside, and writes
# the number to its own stdin: the write end of lathe's census pipe. It says nothing
# itself: sh reports a child killed by a signal ("Killed") on its own stderr, so that is
# /dev/null and only the command gets the real one. POSIX sh builtins only: a process
# forked to count would be counted. It shares the command's process group, so a signal
# the command sends the group (`kill 0`) must not end it: it ended the command's output
# there and read as 143. A handler (`:`), not `''`: ignored signals would be inherited
# by the command, while handlers reset at exec.
_CENSUS = """exec 3>&2 2>/dev/null
trap : HUP INT QUIT TERM USR1 USR2 ALRM
(exec bash -c "$1" </dev/null 2>&3 3>&-)
status=$?
left=0
for process in /proc/[1-9]*; do
  case ${process#/proc/} in 1|$$) continue;; esac
  read -r stat < "$process/stat" 2>/dev/null || continue
  case ${stat##*) } in Z*|X*) continue;; esac
  left=$((left + 1))
done
echo "$left" >&0
exit "$status"
"""


def census_argv(command: str) -> list[str]:
    """`bash -c command` for a sandbox whose PID namespace ends with the command (bwrap,
    runsc): wrapped in the census above, for an executor made with `census=True`. The
    wrapper is the namespace's second process (bwrap's init is the first) or its first
    (runsc). It is `sh`, which sources no BASH_ENV (the command still does) and starts
    faster than bash: under gVisor a bash wrapper cost 80 ms a command, `sh` about 20."""
    return ["sh", "-c", _CENSUS, "sh", command]


class LocalExecutor:
    """Runs commands as subprocesses of lathe, each in its own session/process group and,
    unless `supervise` is False, under the supervisor (see the module docstring)."""

    def __init__(
        self,
        argv_builder: ArgvBuilder | None = None,
        env: Mapping[str, str] | None = None,
        *,
        kill_grace_s: float = 2.0,
        linger_s: float = 1.0,
        hide_env: Iterable[str] = (),
        keep_env: Iterable[str] = (),
        supervise: bool = True,
        census: bool = False,
    ) -> None:
        self._argv_builder = argv_builder or bash_argv
        self._env = dict(env or {})
        # Variables commands must not see: the provider keys (`hide_env`) and every
        # secret-looking one not in `keep_env` (see lathe.exec.env).
        self._hide = frozenset(hide_env)
        self._keep = tuple(keep_env)
        self._kill_grace_s = kill_grace_s
        self._linger_s = linger_s
        self._supervise = supervise
        # The argv runs `census_argv`'s wrapper in a sandbox: its stdin is the census
        # pipe, and what it counts, not the supervisor (which sees only the sandbox's own
        # processes), says what was left running.
        self._census = census

    def environment(self) -> dict[str, str]:
        """The environment every command starts with."""
        inherited = command_environment(os.environ, hide=self._hide, passthrough=self._keep)
        return {**inherited, **NONINTERACTIVE_ENV, **self._env}

    async def run(
        self,
        command: str,
        *,
        cwd: Path,
        timeout: float,
        max_output_bytes: int,
        spill_dir: Path | None,
        stdin: bytes | None = None,
        stderr_max_bytes: int | None = None,
    ) -> ExecResult:
        """`Executor.run`, plus what a hook needs: `stdin`, bytes the command reads on
        its standard input (default: /dev/null), and `stderr_max_bytes`, which captures
        stderr apart into `ExecResult.stderr`, capped the same way (default: stderr
        joins the output; kept apart, it also gets lathe's note on what it had to stop,
        so stdout holds only what the command wrote). `spill_dir` None drops the middle
        of a cut output instead of spilling it. An executor made with `census=True` takes
        no `stdin`: the command's is /dev/null."""
        if self._census and stdin is not None:
            raise ValueError("a census executor's commands read no stdin")
        if "\0" in command:
            raise ExecutorUnavailable(
                "cannot run a command that holds a NUL byte (\\0): no shell takes one; "
                "write it without (printf '\\0' makes one when the command runs)"
            )
        started = time.monotonic()
        argv = self._argv_builder(command, cwd)
        env = self.environment()
        ending: _Ending = (
            _Supervised(argv, env, timeout, self._kill_grace_s)
            if self._supervise
            else _GroupStopped(argv, timeout, self._kill_grace_s, self._linger_s)
        )
        loop = asyncio.get_running_loop()
        out = _Capture(max_output_bytes, spill_dir)
        err = _Capture(stderr_max_bytes, None) if stderr_max_bytes is not None else None
        captures = [out] if err is None else [out, err]
        census = _Census() if self._census else None
        try:
            with _stdin_source(stdin) as source:
                proc = await asyncio.create_subprocess_exec(
                    *ending.argv,
                    cwd=cwd,
                    stdin=source if census is None else census.write_fd,
                    stdout=out.write_fd,
                    stderr=asyncio.subprocess.STDOUT if err is None else err.write_fd,
                    start_new_session=True,
                    env=env,
                    pass_fds=ending.pass_fds,
                )
        except (OSError, ValueError) as exc:  # ValueError: a NUL in the environment
            for capture in captures:
                capture.close()
            ending.close()
            if census is not None:
                census.close()
            reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else exc
            raise ExecutorUnavailable(f"cannot start {argv[0]!r} in {cwd}: {reason}") from exc
        finally:
            for capture in captures:  # the child holds its own copy; ours would block EOF
                capture.close_write()
            ending.spawned()
            if census is not None:
                census.spawned()

        exited = asyncio.ensure_future(proc.wait())
        eof: asyncio.Future[Any] | None = None
        end: _End | None = None
        try:  # the command runs already: a cancellation while the pipes connect must stop it
            ends = [await capture.connect(loop) for capture in captures]
            eof = asyncio.ensure_future(asyncio.gather(*ends))
            # A pipe's end cancelled with the run (Ctrl-C) becomes this future's exception:
            # taken here, or asyncio prints it as "never retrieved" at exit.
            eof.add_done_callback(_exception_taken)
            end = await ending.wait(proc, exited, eof)
        except BaseException:  # cancellation above all: nothing may outlive the run
            ending.kill_now(proc)
            await reaped_after_kill(exited)
            raise
        finally:
            for capture in captures:
                capture.close()
            ending.close()
            left = census.close() if census is not None else end.stopped if end else 0
            for future in (exited, eof):
                if future is not None and not future.done():
                    future.cancel()
        if end.error is not None:
            raise ExecutorUnavailable(f"cannot start {argv[0]!r} in {cwd}: {end.error}")
        # A timed-out command's wrapper may have counted as the timeout struck: the
        # timeout's own note says everything was stopped.
        left = 0 if end.timed_out else left
        note = self._note(left, end.lingered)
        return ExecResult(
            exit_code=end.exit_code,
            output=out.sink.text() + ("" if err else note),
            truncated=out.sink.truncated,
            full_output_path=out.sink.spill_path,
            timed_out=end.timed_out,
            duration_s=time.monotonic() - started,
            stderr=err.sink.text() + note if err else "",
        )

    def _note(self, left: int, lingered: bool) -> str:
        """What lathe says under the output about what it had to stop when the command
        exited: `left` processes still running (the sandbox's end stopped them, or the
        supervisor), or a group that kept the pipe open past the linger."""
        if left:
            processes = "1 background process" if left == 1 else f"{left} background processes"
            which = "which was" if left == 1 else "which were"
            how = "with its sandbox" if self._census else (
                f"(SIGTERM, then SIGKILL after {self._kill_grace_s:g} s)"
            )  # fmt: skip
            return (
                f"\n[lathe: the command exited but left {processes} running, {which} stopped "
                f"{how}: nothing a command starts outlives it. Start, use and stop a server "
                f"or watcher in the same command.]\n"
            )
        if lingered:
            return (
                f"\n[lathe: the command exited, but a background process kept its output "
                f"open; its process group was stopped after {self._linger_s:g} s. Redirect "
                f"the output of background jobs (cmd > file 2>&1 &) to keep them running.]\n"
            )
        return ""


def _exception_taken(future: asyncio.Future[Any]) -> None:
    if not future.cancelled():
        future.exception()


@contextlib.contextmanager
def _stdin_source(data: bytes | None) -> Iterator[Any]:
    """What the command reads: /dev/null, or `data` from an unlinked temporary file (a
    pipe would block lathe on a command that never reads it)."""
    if data is None:
        yield asyncio.subprocess.DEVNULL
        return
    with tempfile.TemporaryFile() as file:
        file.write(data)
        file.seek(0)
        yield file


class _Capture:
    """One output pipe of the command, read into a capped sink."""

    def __init__(self, limit: int, spill_dir: Path | None) -> None:
        self.sink = _OutputSink(limit, spill_dir)
        self._read_fd, self.write_fd = os.pipe()
        self._transport: asyncio.ReadTransport | None = None

    async def connect(self, loop: asyncio.AbstractEventLoop) -> asyncio.Future[None]:
        """Start reading; the future completes when the pipe's write ends are all shut."""
        eof: asyncio.Future[None] = loop.create_future()
        pipe = os.fdopen(self._read_fd, "rb", buffering=0)
        self._read_fd = -1  # the transport owns it now
        self._transport, _ = await loop.connect_read_pipe(lambda: _PipeReader(self.sink, eof), pipe)
        return eof

    def close_write(self) -> None:
        if self.write_fd >= 0:
            os.close(self.write_fd)
            self.write_fd = -1

    def close(self) -> None:
        self.close_write()
        if self._transport is not None:
            self._transport.close()
        elif self._read_fd >= 0:
            os.close(self._read_fd)
            self._read_fd = -1
        self.sink.close()


@dataclass(frozen=True)
class _End:
    exit_code: int | None
    timed_out: bool
    stopped: int = 0  # processes still running when the command exited, then stopped
    lingered: bool = False  # a background job kept the output open; its group was stopped
    error: str | None = None  # the program could not start (the OS's reason)


class _Census:
    """The pipe on which `census_argv`'s wrapper says how many processes the command
    left running; the write end is the command's stdin."""

    def __init__(self) -> None:
        self._read_fd, self.write_fd = os.pipe()

    def spawned(self) -> None:
        if self.write_fd >= 0:
            os.close(self.write_fd)
            self.write_fd = -1

    def close(self) -> int:
        """Once the command has ended: the count (0 when the wrapper said nothing: it
        timed out or was killed)."""
        self.spawned()
        data = b""
        if self._read_fd >= 0:
            os.set_blocking(self._read_fd, False)
            with contextlib.suppress(BlockingIOError):  # a leaked writer still holds it
                data = os.read(self._read_fd, 4096)
            os.close(self._read_fd)
            self._read_fd = -1
        lines = data.split()
        return int(lines[-1]) if lines and lines[-1].isdigit() else 0


class _Ending(Protocol):
    """How one run is brought to its end: supervised, or by signalling its group."""

    argv: list[str]  # what to start: the command's argv, or a wrapper around it
    pass_fds: tuple[int, ...]

    def spawned(self) -> None: ...

    async def wait(
        self, proc: asyncio.subprocess.Process, exited: asyncio.Future[int],
        eof: asyncio.Future[Any],
    ) -> _End: ...  # fmt: skip

    def kill_now(self, proc: asyncio.subprocess.Process) -> None:
        """Synchronous, from a cancellation: SIGKILL everything the command started."""

    def close(self) -> None: ...


class _Supervised:
    def __init__(
        self, argv: list[str], env: Mapping[str, str], timeout: float, grace: float
    ) -> None:
        self._supervision = Supervision(argv, timeout=timeout, grace=grace, env=env)
        self.argv = self._supervision.argv
        self.pass_fds = self._supervision.pass_fds

    def spawned(self) -> None:
        self._supervision.spawned()

    async def wait(
        self, proc: asyncio.subprocess.Process, exited: asyncio.Future[int],
        eof: asyncio.Future[Any],
    ) -> _End:  # fmt: skip
        gave_up = not await _settled(exited, self._supervision.backstop_s)
        if gave_up:  # the supervisor is stuck: lathe's own bound still holds
            self.kill_now(proc)
            if not await _settled(exited, _REAP_AFTER_KILL_S):
                signal_group(proc.pid, signal.SIGKILL)
                await _settled(exited, _REAP_AFTER_KILL_S)
        await _settled(eof, _EOF_AFTER_KILL_S)  # only what escaped the tree holds it now
        report = self._supervision.report()
        if report.reason == "error":
            return _End(None, False, error=report.error)
        timed_out = gave_up or report.timed_out
        if report.reason == "lost":  # the supervisor itself was killed
            return _End(None if timed_out else _exit_code(proc.returncode), timed_out)
        return _End(None if timed_out else report.exit_code, timed_out, report.stopped)

    def kill_now(self, proc: asyncio.subprocess.Process) -> None:
        self._supervision.kill_now(proc)

    def close(self) -> None:
        self._supervision.close()


class _GroupStopped:
    """For an argv that holds the whole tree itself (the sandbox): signal the group."""

    pass_fds: tuple[int, ...] = ()

    def __init__(self, argv: list[str], timeout: float, grace: float, linger: float) -> None:
        self.argv = argv
        self._timeout = max(0.0, timeout)
        self._grace = grace
        self._linger = linger

    def spawned(self) -> None:
        pass

    async def wait(
        self, proc: asyncio.subprocess.Process, exited: asyncio.Future[int],
        eof: asyncio.Future[Any],
    ) -> _End:  # fmt: skip
        timed_out = lingered = False
        if not await _settled(exited, self._timeout):
            timed_out = True
            await self._stop(proc.pid, exited, eof)
        elif not await _settled(eof, self._linger):
            lingered = True
            await self._stop(proc.pid, exited, eof)
        await _settled(eof, _EOF_AFTER_KILL_S)
        await _settled(exited, _REAP_AFTER_KILL_S)
        code = None if timed_out else _exit_code(proc.returncode)
        return _End(code, timed_out, lingered=lingered)

    async def _stop(self, pgid: int, exited: asyncio.Future[int], eof: asyncio.Future[Any]) -> None:
        # The futures are only read from the thread; the caller awaits them after.
        def gone() -> bool:
            return exited.done() and eof.done()

        await asyncio.to_thread(stop_group, pgid, grace=self._grace, gone=gone, kill_wait=0.0)

    def kill_now(self, proc: asyncio.subprocess.Process) -> None:
        signal_group(proc.pid, signal.SIGKILL)

    def close(self) -> None:
        pass


async def _settled(future: asyncio.Future[Any], seconds: float) -> bool:
    """Whether `future` completes within `seconds`; it is never cancelled here."""
    done, _ = await asyncio.wait({future}, timeout=seconds)
    return bool(done)


def _exit_code(returncode: int | None) -> int | None:
    if returncode is None:
        return None
    # Report a death by signal the way a shell does (SIGSEGV -> 139).
    return 128 - returncode if returncode < 0 else returncode


class _PipeReader(asyncio.Protocol):
    def __init__(self, sink: _OutputSink, eof: asyncio.Future[None]) -> None:
        self._sink = sink
        self._eof = eof

    def data_received(self, data: bytes) -> None:
        self._sink.feed(data)

    def connection_lost(self, exc: Exception | None) -> None:
        if not self._eof.done():
            self._eof.set_result(None)
