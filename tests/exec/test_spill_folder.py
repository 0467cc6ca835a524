"""Which spill files a new spill removes: the oldest beyond the folder's bounds, never the
newest other one (the result before names it) nor one still being written (another
call's, or another lathe's on the same workspace), and nothing lathe did not spill."""

from __future__ import annotations

import asyncio
import os
import time
from pathlib import Path

from lathe.exec.local import LocalExecutor
from lathe.exec.output import SPILL_FOLDER_MAX_FILES, SPILL_MAX_BYTES, _prune_spills, cap_output


def _spill(folder: Path) -> Path:
    _, path = cap_output(b"x" * 3000, 1000, folder)
    assert path is not None
    return path


def _aged(path: Path, seconds_ago: float) -> None:
    when = time.time() - seconds_ago
    os.utime(path, (when, when))


def test_beyond_the_count_the_oldest_spill_files_go(tmp_path: Path) -> None:
    folder = tmp_path / "spill"
    made = []
    for n in range(SPILL_FOLDER_MAX_FILES + 5):
        made.append(_spill(folder))
        _aged(made[-1], 1000 - n)  # in the order made, whatever the clock's grain

    left = sorted(p for p in folder.iterdir())
    assert len(left) == SPILL_FOLDER_MAX_FILES
    assert left == sorted(made[-SPILL_FOLDER_MAX_FILES:])


def test_only_lathes_own_spill_files_are_removed(tmp_path: Path) -> None:
    folder = tmp_path / "spill"
    folder.mkdir()
    others = [folder / "notes.log", folder / "mcp-20240101-000000-abcdef12.png"]
    for other in others:
        other.write_text("keep me")
        _aged(other, 5000)
    (folder / "set-aside").mkdir()
    for _ in range(SPILL_FOLDER_MAX_FILES + 2):
        _spill(folder)

    assert all(other.exists() for other in others)
    assert (folder / "set-aside").is_dir()


async def test_a_spill_file_still_being_written_is_never_removed(tmp_path: Path) -> None:
    folder = tmp_path / "spill"
    # A command that spilled and still runs: its file stays open while it does.
    running = asyncio.ensure_future(
        LocalExecutor().run(
            "head -c 5000 /dev/zero; sleep 3; echo end",
            cwd=tmp_path,
            timeout=30,
            max_output_bytes=1000,
            spill_dir=folder,
        )
    )
    for _ in range(200):
        if any(folder.glob("*.log")):
            break
        await asyncio.sleep(0.05)
    (writing,) = folder.glob("*.log")
    _aged(writing, 5000)  # the oldest of all
    for _ in range(SPILL_FOLDER_MAX_FILES + 2):
        _spill(folder)

    result = await running
    assert result.full_output_path == writing
    assert writing.exists() and writing.read_bytes().endswith(b"end\n")


def _large(folder: Path, seconds_ago: float) -> Path:
    """A spill file near the 64 MiB a spill file stops at (sparse: no disk used)."""
    path = _spill(folder)
    os.truncate(path, SPILL_MAX_BYTES)
    _aged(path, seconds_ago)
    return path


def test_a_large_newest_spill_file_does_not_take_the_others(tmp_path: Path) -> None:
    # The new file was counted at 64 MiB when it started, so a newest one near 64 MiB
    # left no room: every other spill file went, though the results two messages back
    # named them. Counted at its real size when it closes, it leaves them room.
    folder = tmp_path / "spill"
    older = [_spill(folder) for _ in range(5)]
    for n, path in enumerate(older):
        _aged(path, 5000 - n)
    newest = _large(folder, 4000)

    new = _spill(folder)

    assert sorted(folder.iterdir()) == sorted([*older, newest, new])


def test_two_large_spill_files_still_keep_the_folder_bound(tmp_path: Path) -> None:
    folder = tmp_path / "spill"
    older = [_large(folder, 5000 - n) for n in range(3)]

    new = _large(folder, 0)
    _prune_spills(new)  # as when it closed at that size

    assert sorted(folder.iterdir()) == sorted([older[-1], new])
