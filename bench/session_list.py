"""`lathe sessions list` over many sessions of mixed sizes.

Writes N sessions into a temporary LATHE_HOME for one workspace — most of them short,
a few long (`--long` of them with `--long-entries` entries each) — then times
`lathe sessions list` as a user runs it (a new process: start-up included): the first
time (no summary index yet: every file is read once), again (the index answers), after
one long session grew behind lathe's back (a run still going, or killed: only that
file's new lines are read), and after one grew through a run that closed it (the run
put its summary into the index). Medians of `--runs`; the CPU time the listing
processes took is printed beside each figure, since other work on the machine
stretches the wall time.

Usage: python bench/session_list.py [--sessions N] [--long K] [--long-entries E] [--runs R]
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from lathe.session import ENTRY_ADAPTER, MessageEntry, SessionStore
from lathe.types import AssistantMessage, ToolCall, ToolResultMessage, UserMessage


def _entries(count: int) -> list[MessageEntry]:
    entries, parent = [], None
    for n in range(count):
        if n == 0:
            message = UserMessage(content="make the failing tests pass")
        elif n % 2:
            call = ToolCall(id=f"c{n}", name="bash", arguments='{"command": "pytest -q"}')
            message = AssistantMessage(text="checking", tool_calls=(call,))
        else:
            message = ToolResultMessage(tool_call_id=f"c{n - 1}", name="bash", content="." * 800)
        entry = MessageEntry(id=f"{n:08x}", parent=parent, message=message)
        entries.append(entry)
        parent = entry.id
    return entries


def _write(store: SessionStore, workspace: Path, entries: list[MessageEntry]) -> Path:
    with store.create(workspace, "bench-model") as session:
        pass
    with session.path.open("ab") as handle:
        handle.write(b"".join(ENTRY_ADAPTER.dump_json(e) + b"\n" for e in entries))
    return session.path


def _list_ms(lathe: str, workspace: Path, env: dict[str, str]) -> tuple[float, float]:
    """The wall time and the CPU time (user + system) of one `lathe sessions list`."""
    before = os.times()
    started = time.perf_counter()
    done = subprocess.run(
        [lathe, "sessions", "list", "-C", str(workspace)], env=env, capture_output=True, text=True
    )
    elapsed = (time.perf_counter() - started) * 1000
    after = os.times()
    if done.returncode != 0:
        raise SystemExit(f"lathe sessions list failed: {done.stderr.strip()}")
    cpu = (after.children_user - before.children_user) + (
        after.children_system - before.children_system
    )
    return elapsed, cpu * 1000


def _median(figures: list[tuple[float, float]]) -> str:
    wall = statistics.median(figure[0] for figure in figures)
    cpu = statistics.median(figure[1] for figure in figures)
    return f"{wall:8.0f} ms   (cpu {cpu:.0f} ms)"


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--sessions", type=int, default=1_000)
    parser.add_argument("--long", type=int, default=10)
    parser.add_argument("--long-entries", type=int, default=20_000)
    parser.add_argument("--runs", type=int, default=5)
    options = parser.parse_args()
    lathe = shutil.which("lathe") or sys.exit("lathe is not installed: pip install -e .")
    with tempfile.TemporaryDirectory() as home:
        env = {**os.environ, "LATHE_HOME": home}
        workspace = Path(home) / "repo"
        workspace.mkdir()
        store = SessionStore(Path(home))
        short, long_ = _entries(12), _entries(options.long_entries)
        paths = [_write(store, workspace, long_) for _ in range(options.long)]
        for _ in range(options.sessions - options.long):
            _write(store, workspace, short)
        size = sum(p.stat().st_size for p in store.project_dir(workspace).glob("*.jsonl"))
        print(
            f"{options.sessions:,} sessions ({options.long} of {options.long_entries:,} "
            f"entries), {size / 1e6:.0f} MB"
        )
        first = [_list_ms(lathe, workspace, env)]
        again = [_list_ms(lathe, workspace, env) for _ in range(options.runs)]
        grown, run = [], []
        for _ in range(options.runs):
            with paths[0].open("ab") as handle:
                handle.write(ENTRY_ADAPTER.dump_json(_entries(2)[1]) + b"\n")
            grown.append(_list_ms(lathe, workspace, env))
        for _ in range(options.runs):
            with store.open_path(paths[1]) as session:
                session.append_message(UserMessage(content="one more step"))
            run.append(_list_ms(lathe, workspace, env))
        print(f"lathe sessions list, first time (no index)   {_median(first)}")
        print(f"lathe sessions list, again                   {_median(again)}")
        print(f"lathe sessions list, one long session grew   {_median(grown)}")
        print(f"  ... one grew through a run (closed)        {_median(run)}")

if __name__ == "__main__":
    main()
