"""A stopped `rg` is always reaped: grep and glob never wait on it for ever.

asyncio pauses a subprocess pipe whose reader fell more than 128 KB behind, and reports
the process's end to `wait()` only once every pipe has reached its end. rg killed at the
output cap with its stdout paused and unread left `wait()` hanging (a 58.9 MB log,
`grep request`: 4 runs in 250 never ended). Through the CLI that takes a busy machine:
the reader's first read late, the exit notice late. These tests stand in for it at the
tool level, each hold waiting on a condition rather than a time, so the hang they
reproduce happens every time before the fix.
"""

from __future__ import annotations

import asyncio
import asyncio.base_subprocess
from pathlib import Path

import pytest

from lathe.tools.grep import RG_COMMON, run_rg

# A bound for each hold, far above what a loaded machine needs: the holds wait on
# conditions, and this only keeps a broken one from waiting for ever.
_HOLD_LIMIT_S = 60.0


class _Stall:
    """Set by a test: a paused pipe's first read then waits until cancelled."""

    def __init__(self) -> None:
        self.paused = asyncio.Event()
        self.read_never = False


@pytest.fixture
def busy_loop(monkeypatch: pytest.MonkeyPatch) -> _Stall:
    """A loop as slow as a busy machine's, made deterministic: each stream's first read
    waits until its pipe is paused (or ended), and the news that a process ended waits
    until someone awaits `wait()`. `paused` is set once a pipe was paused."""
    stall = _Stall()
    read = asyncio.StreamReader.read

    async def late_first_read(self: asyncio.StreamReader, n: int = -1) -> bytes:
        if not getattr(self, "_lathe_test_read", False):
            self._lathe_test_read = True  # type: ignore[attr-defined]
            async with asyncio.timeout(_HOLD_LIMIT_S):
                while not (self._paused or self.at_eof()):  # type: ignore[attr-defined]
                    await asyncio.sleep(0.01)
            if self._paused:  # type: ignore[attr-defined]
                stall.paused.set()
                while stall.read_never:
                    await asyncio.sleep(0.01)
        return await read(self, n)

    transport = asyncio.base_subprocess.BaseSubprocessTransport
    exited = transport._process_exited

    def late_exit_notice(self, returncode: int, held_s: float = 0.0) -> None:  # type: ignore[no-untyped-def]
        if not self._exit_waiters and held_s < _HOLD_LIMIT_S:
            self._loop.call_later(0.01, late_exit_notice, self, returncode, held_s + 0.01)
            return
        exited(self, returncode)

    monkeypatch.setattr(asyncio.StreamReader, "read", late_first_read)
    monkeypatch.setattr(transport, "_process_exited", late_exit_notice)
    return stall


def _log(folder: Path) -> Path:
    # Far more matching output than the pipe (64 KB) and the stream's pause mark (128 KB).
    (folder / "big.log").write_text("".join(f"GET /request/{n} 200\n" for n in range(200_000)))
    return folder


async def test_rg_cut_at_the_cap_with_its_pipe_paused_is_reaped(
    busy_loop: _Stall, tmp_path: Path
) -> None:
    cwd = _log(tmp_path)
    async with asyncio.timeout(2 * _HOLD_LIMIT_S):
        result = await run_rg([*RG_COMMON, "request", "big.log"], cwd=cwd, max_bytes=30_000)
    assert busy_loop.paused.is_set()  # the stdout pipe was paused: the case that hung
    assert result.cut
    assert len(result.stdout) == 30_000
    assert result.lines()[0] == "GET /request/0 200"


async def test_rg_cancelled_with_its_pipe_paused_is_reaped(
    busy_loop: _Stall, tmp_path: Path
) -> None:
    cwd = _log(tmp_path)
    busy_loop.read_never = True
    search = asyncio.create_task(
        run_rg([*RG_COMMON, "request", "big.log"], cwd=cwd, max_bytes=50_000_000)
    )
    async with asyncio.timeout(10):
        await busy_loop.paused.wait()
    search.cancel()
    done, _ = await asyncio.wait({search}, timeout=20)
    assert done == {search}, "rg was never reaped"
    assert search.cancelled()
