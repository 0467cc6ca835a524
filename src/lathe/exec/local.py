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
import fcntl
import os
import re
import secrets
import signal
import tempfile
import time
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, BinaryIO, Protocol

from lathe.exec.base import ExecResult, ExecutorUnavailable
from lathe.exec.env import command_environment
from lathe.exec.supervision import Supervision, reaped_after_kill, signal_group, stop_group
from lathe.exec.terminal import terminal_text

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

# The end of a command's output (test summaries, the error that stopped a build) usually
# matters more than its start, so the tail gets the larger share.
_HEAD_SHARE = 0.4
# A spill file keeps no more: the output's end is in the result, and an endless command
# must not fill the disk the workspace is on.
SPILL_MAX_BYTES = 64 * 1024 * 1024
_SPILL_FULL = "\n[... the spill file stops at 64 MiB; the output's end is in the result ...]\n"
# A spill folder keeps no more of lathe's spill files than this (when a spill closes,
# the oldest beyond go: `_prune_spills`): three `yes` under a 2 s timeout left 193 MB
# in the workspace, and nothing ever removed one.
SPILL_FOLDER_MAX_FILES = 64
SPILL_FOLDER_MAX_BYTES = 2 * SPILL_MAX_BYTES
_SPILL_NAME = re.compile(r"\d{8}-\d{6}-[0-9a-f]{8}\.log")
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
        note = self._note(left, end.lingered, sandboxed=census is not None)
        return ExecResult(
            exit_code=end.exit_code,
            output=out.sink.text() + ("" if err else note),
            truncated=out.sink.truncated,
            full_output_path=out.sink.spill_path,
            timed_out=end.timed_out,
            duration_s=time.monotonic() - started,
            stderr=err.sink.text() + note if err else "",
        )

    def _note(self, left: int, lingered: bool, *, sandboxed: bool) -> str:
        """What lathe says under the output about what it had to stop when the command
        exited: `left` processes still running (the sandbox's end stopped them, or the
        supervisor), or a group that kept the pipe open past the linger."""
        if left:
            processes = "1 background process" if left == 1 else f"{left} background processes"
            which = "which was" if left == 1 else "which were"
            how = "with its sandbox" if sandboxed else (
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


def cap_output(data: bytes, limit: int, spill_dir: Path | None) -> tuple[str, Path | None]:
    """Output a tool already holds, capped as command output is: all of it when it fits
    in `limit` bytes as shown, else head and tail around a marker, the whole in a spill
    file (its path returned; None when nothing was cut or it could not be written)."""
    sink = _OutputSink(limit, spill_dir)
    sink.feed(data)
    sink.close()
    return sink.text(), sink.spill_path


class _OutputSink:
    """Keeps all output while it fits in `limit`; past that, a head and a tail in memory
    and everything in a spill file.

    `limit` bounds the text the model is shown (`text`): cleaned as a terminal shows it,
    the marker included. Cleaning mostly shrinks an output, but a run of control bytes
    becomes one U+FFFD (3 bytes) and so does each invalid byte: an output cut to fit its
    raw bytes grew past the cap once cleaned, and the tool output cap cut it again (two
    notices naming two spill files, the real marker swallowed). The numbers the marker
    gives count the spill file's bytes, which are the output as it came."""

    def __init__(self, limit: int, spill_dir: Path | None) -> None:
        self._limit = max(limit, 0)
        self._head_limit = int(self._limit * _HEAD_SHARE)
        self._tail_limit = self._limit - self._head_limit
        self._spill_dir = spill_dir
        self._buffer = bytearray()  # everything until the limit is passed, then the head
        self._tail = bytearray()
        self._spill: BinaryIO | None = None
        self._spill_error: str | None = None
        self._spilled = 0  # bytes in the spill file
        self._spill_full = False  # it reached SPILL_MAX_BYTES
        self._closed = False
        self._whole: str | None = None  # the cleaned output, when it fits uncut
        self.spill_path: Path | None = None
        self.total = 0
        self.truncated = False

    def feed(self, data: bytes) -> None:
        self.total += len(data)
        if not self.truncated:
            self._buffer += data
            if len(self._buffer) > self._limit:
                self._start_spill()
            return
        self._write_spill(data)
        self._tail += data
        if len(self._tail) > self._tail_limit:
            del self._tail[: len(self._tail) - self._tail_limit]

    def _start_spill(self) -> None:
        self.truncated = True
        everything = bytes(self._buffer)
        # Cut at `close`, the output may fit `limit` raw: then head and tail only meet.
        tail_start = max(len(everything) - self._tail_limit, self._head_limit)
        self._tail = bytearray(everything[tail_start:])
        self._buffer = bytearray(everything[: self._head_limit])
        if self._spill_dir is None:  # nobody would read it: the middle is dropped
            return
        try:
            self._spill_dir.mkdir(parents=True, exist_ok=True)
            path = self._spill_dir / f"{time.strftime('%Y%m%d-%H%M%S')}-{secrets.token_hex(4)}.log"
            self._spill = path.open("xb")
            self.spill_path = path
        except OSError as exc:
            self._spill_error = str(exc)
            return
        # Held while it is written: a spill starting meanwhile (another call's, another
        # lathe's on this workspace) must not remove it (`_prune_spills`).
        with contextlib.suppress(OSError):
            fcntl.flock(self._spill.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
        self._write_spill(everything)

    def _write_spill(self, data: bytes) -> None:
        if self._spill is None:
            return
        room = SPILL_MAX_BYTES - self._spilled
        full = len(data) >= room
        try:
            self._spill.write(data[:room] if full else data)
            self._spilled += min(len(data), room)
            if full:  # `yes` under a 2 s timeout wrote 1.4 GB into the workspace
                self._spill.write(_SPILL_FULL.encode())
        except OSError as exc:  # a full disk must not lose the run, only the spill
            self._spill_error = str(exc)
            full = True
        if full:
            self._close_spill()
            self._spill_full = self._spill_error is None

    def _close_spill(self) -> None:
        """Close the spill file, then make room for it in its folder: by its real size,
        now known. Counted at the 64 MiB it may reach when it started, a newest file
        near that size took every other one, named by results a few messages back."""
        assert self._spill is not None and self.spill_path is not None
        self._spill.close()
        self._spill = None
        _prune_spills(self.spill_path)

    def close(self) -> None:
        """No more output comes. An output that fits `limit` raw but not once cleaned is
        cut now, as a longer one was."""
        if not self._closed:
            self._closed = True
            if not self.truncated:
                whole = terminal_text(self._buffer.decode("utf-8", "replace"))
                if len(whole.encode()) <= self._limit:
                    self._whole = whole
                else:
                    self._start_spill()
        if self._spill is not None:
            self._close_spill()

    def text(self) -> str:
        """The output as a terminal would have shown it (`terminal.terminal_text`), in at
        most `limit` bytes; the spill file keeps the bytes as they came."""
        self.close()
        if self._whole is not None:
            return self._whole
        head, tail = _cut_at_lines(bytes(self._buffer), bytes(self._tail))
        head, tail = _whole_head(head), _whole_tail(tail)
        # The marker's numbers only get smaller as head and tail do: room for it now.
        room = max(self._limit - len(self._marker(len(head), self.total).encode()), 0)
        head_text, tail_text = _shown(head), _shown(tail)
        if _size(head_text) + _size(tail_text) > room:
            head_room = max(int(room * _HEAD_SHARE), room - _size(tail_text))
            if _size(head_text) > head_room:
                head = _head_within(head, head_room)
                head_text = _shown(head)
            if _size(head_text) + _size(tail_text) > room:
                tail = _tail_within(tail, room - _size(head_text))
                tail_text = _shown(tail)
        marker = self._marker(len(head), self.total - len(head) - len(tail))
        return head_text + marker + tail_text

    def _marker(self, head: int, omitted: int) -> str:
        """Between head and tail: how many bytes are not shown and, with a spill file,
        the byte of it they start at (what `tail -c +BYTE` pages from)."""
        where = (
            f"; the spill file could not be written: {self._spill_error}"
            if self._spill_error
            else "; the spill file stops at 64 MiB"
            if self._spill_full
            else ""
        )
        start = f"from byte {head + 1:,}: " if self.spill_path is not None else ""
        return f"\n[... {start}{omitted:,} bytes omitted{where} ...]\n"


def _shown(data: bytes) -> str:
    return terminal_text(data.decode("utf-8", "replace"))


def _size(text: str) -> int:
    return len(text.encode())


def _cut_at_lines(head: bytes, tail: bytes) -> tuple[bytes, bytes]:
    """Prefer whole lines at the cut when a line break is near it."""
    newline = head.rfind(b"\n")
    if newline >= len(head) // 2:
        head = head[: newline + 1]
    newline = tail.find(b"\n")
    if 0 <= newline < len(tail) // 2:
        tail = tail[newline + 1 :]
    return head, tail


def _head_within(head: bytes, room: int) -> bytes:
    """The longest start of `head` (found by halving) that fits `room` bytes as shown,
    at a line break when one is near its end. Cleaning works line by line, so a shorter
    start of whole lines shows no more than a longer one."""
    fits, too_long = 0, len(head)
    while too_long - fits > 1:
        middle = (fits + too_long) // 2
        if _size(_shown(_whole_head(head[:middle]))) <= room:
            fits = middle
        else:
            too_long = middle
    return _cut_at_lines(_whole_head(head[:fits]), b"")[0]


def _tail_within(tail: bytes, room: int) -> bytes:
    """The longest end of `tail` that fits `room` bytes as shown, from a line's start
    when one is near."""
    too_long, fits = 0, len(tail)
    while fits - too_long > 1:
        middle = (too_long + fits) // 2
        if _size(_shown(_whole_tail(tail[middle:]))) <= room:
            fits = middle
        else:
            too_long = middle
    return _whole_tail(_cut_at_lines(b"", tail[fits:])[1])


# An escape sequence the cut left without its end: shown, it would be a U+FFFD and its
# first characters.
_OPEN_ESCAPE = re.compile(rb"\x1b(?:\[[0-?]*[ -/]*)?\Z")


def _whole_head(data: bytes) -> bytes:
    """`data` without a character or an escape sequence the cut left unfinished."""
    for back in range(1, min(4, len(data)) + 1):
        byte = data[-back]
        if byte < 0x80:
            break
        if byte >= 0xC0:  # the lead byte of the last character
            if (2 if byte < 0xE0 else 3 if byte < 0xF0 else 4) > back:
                data = data[:-back]
            break
    opened = _OPEN_ESCAPE.search(data)
    return data[: opened.start()] if opened else data


def _whole_tail(data: bytes) -> bytes:
    """`data` from its first whole character."""
    start = 0
    while start < min(len(data), 3) and 0x80 <= data[start] <= 0xBF:
        start += 1
    return data[start:]


def _prune_spills(spill: Path) -> None:
    """Make room for the spill file `spill`, just closed: remove lathe's oldest spill
    files in its folder beyond SPILL_FOLDER_MAX_FILES or SPILL_FOLDER_MAX_BYTES, counted
    at their real sizes. Kept whatever their size: `spill` and the newest other one (the
    result before names it, and the model may be paging it) and any still being written
    (its writer holds a lock: a call running alongside, another lathe on this
    workspace). Nothing else in the folder (set-aside folders, an MCP server's files)
    is touched."""
    try:
        files, size = 1, spill.stat().st_size
        spills = [
            (entry.stat(follow_symlinks=False), entry.path)
            for entry in os.scandir(spill.parent)
            if _SPILL_NAME.fullmatch(entry.name) and entry.is_file(follow_symlinks=False)
            and entry.name != spill.name
        ]  # fmt: skip
    except OSError:
        return
    spills.sort(key=lambda other: other[0].st_mtime_ns, reverse=True)
    for index, (stat, path) in enumerate(spills):
        keep = files < SPILL_FOLDER_MAX_FILES and size + stat.st_size <= SPILL_FOLDER_MAX_BYTES
        if index == 0 or keep or not _removed_unless_written(path):
            files, size = files + 1, size + stat.st_size


def _removed_unless_written(path: str) -> bool:
    """Remove the spill file `path` unless its writer still holds it; whether it went."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
    except OSError:
        return False
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        os.unlink(path)
    except OSError:  # BlockingIOError: being written
        return False
    finally:
        os.close(fd)
    return True
