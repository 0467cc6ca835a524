"""Time and memory to open and resume a long session (20,000 and 50,000 entries).

Builds a realistic session (user turns, assistant replies with tool calls and usage,
tool results of a few hundred bytes to a few KB) in a temporary LATHE_HOME for each
size, then opens it the way `--resume` does, in a fresh process each time so that its
peak RSS is the process's own and not what building the session cost here: open for
appending (read, parse, lock), rebuild the conversation to send, and time one full
garbage collection: the work the loaded objects add to the collector unless the process
freezes them (`gc.freeze`). Prints the median of `--runs` such processes, and the peak
RSS with what the interpreter and the imports alone took. Then times listing, and a few
hundred real appends (each waits for fsync). The file is written in one go with the
same serialisation `append` uses.

    python bench/session_load.py [--entries 20000 50000] [--runs 3]
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import random
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from lathe.session import ENTRY_ADAPTER, MessageEntry, SessionStore
from lathe.types import (
    AssistantMessage,
    Message,
    StopReason,
    ToolCall,
    ToolResultMessage,
    Usage,
    UserMessage,
)


def _conversation(count: int, rng: random.Random) -> list[MessageEntry]:
    entries: list[MessageEntry] = []
    parent: str | None = None
    turn = 0
    while len(entries) < count:
        if turn % 25 == 0:
            message: Message = UserMessage(content=f"task {turn}: make the tests in pkg{turn} pass")
        else:
            call_id = f"call_{turn}"
            arguments = json.dumps({"command": f"pytest -q tests/test_{turn}.py"})
            message = AssistantMessage(
                text="Let me check the failing test." if rng.random() < 0.5 else "",
                tool_calls=(ToolCall(id=call_id, name="bash", arguments=arguments),),
                stop_reason=StopReason.TOOL_USE,
                usage=Usage(input_tokens=rng.randint(2_000, 60_000), output_tokens=150),
                model="bench-model",
            )
            entry = MessageEntry(id=f"{len(entries):08x}", parent=parent, message=message)
            entries.append(entry)
            parent = entry.id
            output = "\n".join(f"tests/test_{turn}.py::case_{n} PASSED" for n in range(60))
            message = ToolResultMessage(
                tool_call_id=call_id, name="bash", content=output[: rng.randint(200, 3_000)]
            )
        entry = MessageEntry(id=f"{len(entries):08x}", parent=parent, message=message)
        entries.append(entry)
        parent = entry.id
        turn += 1
    return entries[:count]


def _peak_mb() -> float:
    """This process's peak RSS. VmHWM belongs to the process's own memory image;
    ru_maxrss would also count the bench process this one was started from, which Linux
    carries over through fork and exec."""
    try:
        status = Path("/proc/self/status").read_text()
    except OSError:
        return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # KiB on Linux
    line = next(line for line in status.splitlines() if line.startswith("VmHWM:"))
    return int(line.split()[1]) / 1024


def _open_once(home: str, session_id: str) -> None:
    """In the fresh process: open the session for appending, rebuild the conversation,
    and print the figures as one JSON line."""
    before = _peak_mb()
    started, cpu = time.perf_counter(), time.process_time()
    session = SessionStore(Path(home)).open(session_id)
    opened, opened_cpu = time.perf_counter(), time.process_time()
    messages = session.conversation()
    rebuilt, rebuilt_cpu = time.perf_counter(), time.process_time()
    assert len(messages) >= len(session.entries) and not session.warnings
    gc.collect()  # a full collection walks every loaded object
    collected = time.perf_counter()
    print(
        json.dumps(
            {
                "open": opened - started,
                "open_cpu": opened_cpu - cpu,
                "conversation": rebuilt - opened,
                "total": rebuilt - started,
                "total_cpu": rebuilt_cpu - cpu,
                "collect": collected - rebuilt,
                "peak_mb": _peak_mb(),
                "imports_mb": before,
            }
        )
    )
    session.close()


def _fresh_open(home: Path, session_id: str) -> dict[str, float]:
    child = subprocess.run(
        [sys.executable, __file__, "--open-in", str(home), session_id],
        check=True,
        capture_output=True,
        text=True,
        env=os.environ,
    )
    return json.loads(child.stdout)


def _timed(label: str, action):  # type: ignore[no-untyped-def]
    started = time.perf_counter()
    value = action()
    print(f"{label:<44} {time.perf_counter() - started:8.3f} s")
    return value


def _measure(count: int, runs: int, appends: int) -> None:
    with tempfile.TemporaryDirectory() as folder:
        home = Path(folder)
        os.environ["LATHE_HOME"] = folder
        workspace = home / "repo"
        workspace.mkdir()
        store = SessionStore(home)
        entries = _conversation(count, random.Random(7))
        with store.create(workspace, "bench-model") as session:
            pass
        with session.path.open("ab") as handle:
            handle.write(b"".join(ENTRY_ADAPTER.dump_json(e) + b"\n" for e in entries))
        del entries
        size = session.path.stat().st_size
        print(f"\nsession: {count:,} entries, {size / 1e6:.1f} MB")
        print(f"machine: {os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.1f}")

        figures = [_fresh_open(home, session.id) for _ in range(runs)]

        def median(key: str) -> float:
            return statistics.median(figure[key] for figure in figures)

        print(f"fresh process, median of {runs}:")
        print(f"{'  open for append (read, parse, lock)':<44} {median('open'):8.3f} s", end="")
        print(f"   (cpu {median('open_cpu'):.3f} s)")
        print(f"{'  rebuild conversation (branch + repair)':<44} {median('conversation'):8.3f} s")
        print(f"{'  open + conversation':<44} {median('total'):8.3f} s", end="")
        print(f"   (cpu {median('total_cpu'):.3f} s)")
        print(f"{'  then one full garbage collection':<44} {median('collect'):8.3f} s")
        print(
            f"{'  peak RSS of that process':<44} {median('peak_mb'):8.0f} MB"
            f"   ({median('imports_mb'):.0f} MB of it the interpreter and imports)"
        )

        _timed("list (summarise every session)", lambda: store.list(workspace))
        _timed("list again (unchanged files: the index)", lambda: store.list(workspace))
        with store.open(session.id) as resumed:
            started = time.perf_counter()
            for _ in range(appends):
                resumed.append_message(UserMessage(content="one more line"))
            per_append = (time.perf_counter() - started) / appends
        print(f"{'append (write + fsync), per entry':<44} {per_append * 1000:8.2f} ms")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--entries", type=int, nargs="+", default=[20_000, 50_000])
    parser.add_argument("--runs", type=int, default=3, help="fresh processes per size")
    parser.add_argument("--appends", type=int, default=200)
    parser.add_argument("--open-in", nargs=2, metavar=("HOME", "ID"), help=argparse.SUPPRESS)
    options = parser.parse_args()
    if options.open_in:
        _open_once(*options.open_in)
        return
    for count in options.entries:
        _measure(count, options.runs, options.appends)


if __name__ == "__main__":
    main()
