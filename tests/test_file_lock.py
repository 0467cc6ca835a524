"""The one cross-process lock every lathe lock is made of."""

from __future__ import annotations

import subprocess
import sys
import time

from lathe.file_lock import FileLock, is_held


def test_a_second_taker_learns_what_the_holder_recorded(tmp_path) -> None:
    path = tmp_path / "x.lock"
    first, second = FileLock(path), FileLock(path)

    assert first.try_acquire("4242\nlathe run\n") is None
    assert second.try_acquire("7\n") == "4242\nlathe run\n"
    assert is_held(path)
    first.release()
    assert not is_held(path)
    assert second.try_acquire("7\n") is None
    second.release()
    assert path.exists()  # never deleted: a waiter would lock a file nobody else sees


def test_a_killed_holder_leaves_nothing_locked(tmp_path) -> None:
    path = tmp_path / "x.lock"
    holder = subprocess.Popen(
        [sys.executable, "-c", "import sys, time; from lathe.file_lock import FileLock; "
         f"FileLock(__import__('pathlib').Path({str(path)!r})).try_acquire('held'); "
         "print('ok', flush=True); time.sleep(300)"],
        stdout=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        assert holder.stdout is not None and holder.stdout.readline() == "ok\n"
        assert FileLock(path).try_acquire() == "held"
    finally:
        holder.kill()
        holder.wait()
    lock = FileLock(path)
    assert lock.try_acquire() is None
    lock.release()


def test_acquire_waits_for_the_holder(tmp_path) -> None:
    path = tmp_path / "x.lock"
    holder = subprocess.Popen(
        [sys.executable, "-c", "import time; from pathlib import Path; "
         "from lathe.file_lock import FileLock; "
         f"FileLock(Path({str(path)!r})).try_acquire('held'); print('ok', flush=True); "
         "time.sleep(1)"],
        stdout=subprocess.PIPE, text=True,
    )  # fmt: skip
    assert holder.stdout is not None and holder.stdout.readline() == "ok\n"
    started = time.monotonic()
    with FileLock(path):
        assert time.monotonic() - started > 0.3
    holder.wait()
