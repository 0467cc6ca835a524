"""Run shell commands on this machine, following the contract in `lathe.exec.base`.

The process and output handling is independent of the argv: `argv_builder` turns a
command string and a working directory into the program to start, so a sandboxing
executor reuses everything here by prefixing its own arguments.

How a run ends:
- the command exits and its output pipe closes: the normal case;
- the command exits but a background grandchild still holds the pipe: we wait
  `linger_s` for the pipe to close, then stop the process group (the exit code is kept
  and a note says what happened; backgrounded jobs should redirect their output);
- the timeout passes: SIGTERM to the group, up to `kill_grace_s` for it to go, then
  SIGKILL to the group; `exit_code` is None and `timed_out` True;
- the awaiting task is cancelled: SIGKILL to the group at once, then CancelledError.
"""

from __future__ import annotations

import asyncio
import codecs
import contextlib
import os
import secrets
import signal
import time
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Any, BinaryIO

from lathe.exec.base import ExecResult, ExecutorUnavailable
from lathe.exec.env import command_environment

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
_EOF_AFTER_KILL_S = 2.0  # a process that escaped the group may keep the pipe open
_REAP_AFTER_KILL_S = 5.0


def bash_argv(command: str, cwd: Path) -> list[str]:
    return ["bash", "-c", command]


class LocalExecutor:
    """Runs commands as subprocesses of lathe, each in its own session/process group."""

    def __init__(
        self,
        argv_builder: ArgvBuilder | None = None,
        env: Mapping[str, str] | None = None,
        *,
        kill_grace_s: float = 2.0,
        linger_s: float = 1.0,
        hide_env: Iterable[str] = (),
        keep_env: Iterable[str] = (),
    ) -> None:
        self._argv_builder = argv_builder or bash_argv
        self._env = dict(env or {})
        # Variables commands must not see: the provider keys (`hide_env`) and every
        # secret-looking one not in `keep_env` (see lathe.exec.env).
        self._hide = frozenset(hide_env)
        self._keep = tuple(keep_env)
        self._kill_grace_s = kill_grace_s
        self._linger_s = linger_s

    def _environment(self) -> dict[str, str]:
        inherited = command_environment(os.environ, hide=self._hide, passthrough=self._keep)
        return {**inherited, **NONINTERACTIVE_ENV, **self._env}

    async def run(
        self,
        command: str,
        *,
        cwd: Path,
        timeout: float,
        max_output_bytes: int,
        spill_dir: Path,
    ) -> ExecResult:
        started = time.monotonic()
        argv = self._argv_builder(command, cwd)
        loop = asyncio.get_running_loop()
        sink = _OutputSink(max_output_bytes, spill_dir)
        read_fd, write_fd = os.pipe()
        try:
            proc = await asyncio.create_subprocess_exec(
                *argv,
                cwd=cwd,
                stdin=asyncio.subprocess.DEVNULL,
                stdout=write_fd,
                stderr=asyncio.subprocess.STDOUT,
                start_new_session=True,
                env=self._environment(),
            )
        except OSError as exc:
            os.close(read_fd)
            raise ExecutorUnavailable(
                f"cannot start {argv[0]!r} in {cwd}: {exc.strerror or exc}"
            ) from exc
        finally:
            os.close(write_fd)  # the child holds its own copy; ours would block EOF

        eof = loop.create_future()
        transport, _ = await loop.connect_read_pipe(
            lambda: _PipeReader(sink, eof), os.fdopen(read_fd, "rb", buffering=0)
        )
        exited = asyncio.ensure_future(proc.wait())
        timed_out = lingered = False
        try:
            if not await _settled(exited, max(0.0, timeout)):
                timed_out = True
                await self._stop_group(proc.pid, exited, eof)
            elif not await _settled(eof, self._linger_s):
                lingered = True
                await self._stop_group(proc.pid, exited, eof)
            await _settled(eof, _EOF_AFTER_KILL_S)
            await _settled(exited, _REAP_AFTER_KILL_S)
        except BaseException:  # cancellation above all: nothing may outlive the run
            _signal_group(proc.pid, signal.SIGKILL)
            raise
        finally:
            transport.close()
            sink.close()
            if not exited.done():
                exited.cancel()

        output = sink.text()
        if lingered:
            output += (
                f"\n[lathe: the command exited, but a background process kept its output "
                f"open; its process group was stopped after {self._linger_s:g} s. Redirect "
                f"the output of background jobs (cmd > file 2>&1 &) to keep them running.]\n"
            )
        return ExecResult(
            exit_code=None if timed_out else _exit_code(proc.returncode),
            output=output,
            truncated=sink.truncated,
            full_output_path=sink.spill_path,
            timed_out=timed_out,
            duration_s=time.monotonic() - started,
        )

    async def _stop_group(
        self, pgid: int, exited: asyncio.Future[int], eof: asyncio.Future[None]
    ) -> None:
        # SIGTERM lets tools clean up; the SIGKILL that follows is unconditional because
        # a grandchild may ignore SIGTERM or may have detached from our pipe.
        _signal_group(pgid, signal.SIGTERM)
        both: list[asyncio.Future[Any]] = [exited, eof]
        await asyncio.wait(both, timeout=self._kill_grace_s)
        _signal_group(pgid, signal.SIGKILL)


async def _settled(future: asyncio.Future[Any], seconds: float) -> bool:
    """Whether `future` completes within `seconds`; it is never cancelled here."""
    done, _ = await asyncio.wait({future}, timeout=seconds)
    return bool(done)


def _signal_group(pgid: int, sig: signal.Signals) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, sig)


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


class _OutputSink:
    """Keeps all output while it fits in `limit`; past that, a head and a tail in memory
    and everything in a spill file."""

    def __init__(self, limit: int, spill_dir: Path) -> None:
        self._limit = max(limit, 0)
        self._head_limit = int(self._limit * _HEAD_SHARE)
        self._tail_limit = self._limit - self._head_limit
        self._spill_dir = spill_dir
        self._buffer = bytearray()  # everything until the limit is passed, then the head
        self._tail = bytearray()
        self._spill: BinaryIO | None = None
        self._spill_error: str | None = None
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
        self._tail = bytearray(everything[len(everything) - self._tail_limit :])
        self._buffer = bytearray(everything[: self._head_limit])
        try:
            self._spill_dir.mkdir(parents=True, exist_ok=True)
            path = self._spill_dir / f"{time.strftime('%Y%m%d-%H%M%S')}-{secrets.token_hex(4)}.log"
            self._spill = path.open("xb")
            self.spill_path = path
        except OSError as exc:
            self._spill_error = str(exc)
            return
        self._write_spill(everything)

    def _write_spill(self, data: bytes) -> None:
        if self._spill is None:
            return
        try:
            self._spill.write(data)
        except OSError as exc:  # a full disk must not lose the run, only the spill
            self._spill_error = str(exc)
            self._spill.close()
            self._spill = None

    def close(self) -> None:
        if self._spill is not None:
            self._spill.close()
            self._spill = None

    def text(self) -> str:
        if not self.truncated:
            return self._buffer.decode("utf-8", "replace")
        head, tail = _cut_at_lines(bytes(self._buffer), bytes(self._tail))
        omitted = self.total - len(head) - len(tail)
        where = (
            f"; the spill file could not be written: {self._spill_error}"
            if self._spill_error
            else ""
        )
        marker = f"\n[... {omitted:,} bytes omitted{where} ...]\n"
        return _decode_head(head) + marker + _decode_tail(tail)


def _cut_at_lines(head: bytes, tail: bytes) -> tuple[bytes, bytes]:
    """Prefer whole lines at the cut when a line break is near it."""
    newline = head.rfind(b"\n")
    if newline >= len(head) // 2:
        head = head[: newline + 1]
    newline = tail.find(b"\n")
    if 0 <= newline < len(tail) // 2:
        tail = tail[newline + 1 :]
    return head, tail


def _decode_head(data: bytes) -> str:
    # Not final: a multi-byte character cut at the end is dropped, not replaced.
    return codecs.getincrementaldecoder("utf-8")("replace").decode(data, final=False)


def _decode_tail(data: bytes) -> str:
    start = 0
    while start < min(len(data), 3) and 0x80 <= data[start] <= 0xBF:
        start += 1
    return data[start:].decode("utf-8", "replace")
