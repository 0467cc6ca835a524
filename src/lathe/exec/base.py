"""The executor seam: tools never call subprocess themselves, they ask an executor.

Contract for `Executor.run`:
- Runs `command` with `bash -c` in `cwd`, in a new session/process group, stdin at
  /dev/null (a command never blocks waiting for input).
- stdout and stderr are captured as one stream, decoded as UTF-8 with replacement.
- Nothing the command starts outlives it, its timeout or lathe: every descendant is
  stopped, those that left the process group (`setsid`, double forks) included, when
  the command exits (so background jobs end with it), when the timeout passes (`run`
  returns promptly with `timed_out=True`), when the awaiting task is cancelled (killed
  at once, then the cancellation is re-raised), and when lathe dies, even by SIGKILL.
- Output beyond `max_output_bytes` keeps its head and tail in `output` with a marker in
  between; the complete output is written to a file under `spill_dir`, named in
  `full_output_path`. Memory use stays bounded however much the command prints.
- It raises only for problems of lathe's own (e.g. the sandbox cannot start:
  `ExecutorUnavailable`); a failing command is a normal result with its exit code.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from lathe.errors import LatheError


class ExecutorUnavailable(LatheError):
    """The executor cannot run commands at all here; the message says why and the fix."""


@dataclass(frozen=True)
class SandboxStatus:
    """Whether a sandbox can start commands on this machine, from a probe that starts one."""

    available: bool
    message: str  # what is wrong and how to fix it; a short confirmation when available
    binary: str | None = None  # the sandbox's program found (bwrap, runsc)


@dataclass(frozen=True)
class ExecResult:
    exit_code: int | None  # None when the process was killed (timeout, interrupt)
    output: str
    truncated: bool
    full_output_path: Path | None
    timed_out: bool
    duration_s: float
    stderr: str = ""  # only when the executor was asked to keep stderr apart


class Executor(Protocol):
    async def run(
        self,
        command: str,
        *,
        cwd: Path,
        timeout: float,
        max_output_bytes: int,
        spill_dir: Path,
    ) -> ExecResult: ...
