"""Every performance figure lathe tracks, in one run, with the machine's load beside them,
so that a before/after comparison is one command on each side.

Each bench runs as its own process (so one's imports and garbage do not weigh on the
next) against the lathe this interpreter imports: to measure another checkout, run it
with PYTHONPATH pointing at that checkout's src/. `--suite` also times the whole test
suite (the README's test command), and `--local` the local model's first requests on
the development tasks (bench/first_request.py; the model must be installed): minutes.

Usage: python bench/all.py [--quick] [--suite] [--local]
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent


def _benches(quick: bool) -> list[tuple[str, list[str]]]:
    runs = "3" if quick else "5"
    return [
        ("start-up", ["startup.py", "--runs", "7" if quick else "15"]),
        ("a whole task: the calculator, scripted model", ["task_overhead.py", "--runs", runs]),
        ("loop overhead per turn", ["loop_overhead.py"]),
        ("one model request as the conversation grows", ["request_build.py"]),
        ("sessions: list and open", ["session_load.py", "--entries", "20000", "50000"]),
        ("sessions list with many sessions", ["session_list.py"]),
        ("MCP: schema tokens, time to the first result", ["mcp_tools.py", "--runs", runs]),
        ("lathe serve under load", ["serve_load.py", *(["--sessions", "30"] if quick else [])]),
    ]


def _load() -> str:
    one, five, _ = os.getloadavg()
    return f"load average {one:.2f} (1 min), {five:.2f} (5 min) on {os.cpu_count()} CPUs"


def _bytecode() -> str:
    # With bytecode caching off every process compiles each module it imports from
    # source: on this project's 2-core machine that doubled start-up and the pytest
    # runs, so figures taken that way are not comparable with ones taken without it.
    if sys.dont_write_bytecode:
        return "bytecode caching OFF (PYTHONDONTWRITEBYTECODE): start-up figures include compiling"
    return "bytecode caching on"


def _run(title: str, argv: list[str]) -> None:
    print(f"\n== {title} ({' '.join(argv)})", flush=True)
    started = time.perf_counter()
    done = subprocess.run([sys.executable, str(HERE / argv[0]), *argv[1:]], check=False)
    if done.returncode != 0:
        print(f"   (exited {done.returncode})")
    print(f"   [{time.perf_counter() - started:.0f} s]", flush=True)


def _suite() -> None:
    print("\n== the test suite (python -m pytest)", flush=True)
    started = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider"],
        cwd=HERE.parent,
        capture_output=True,
        text=True,
        check=False,
    )
    summary = done.stdout.strip().splitlines()[-1:] or ["(no output)"]
    print(f"   {summary[0]}")
    print(f"   wall {time.perf_counter() - started:.0f} s")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer repetitions")
    parser.add_argument("--suite", action="store_true", help="also time the test suite")
    parser.add_argument(
        "--local", action="store_true", help="also the local model's first requests"
    )
    options = parser.parse_args()
    import lathe

    print(f"lathe from {Path(lathe.__file__).parent}")
    print(f"before: {_load()}; {_bytecode()}")
    for title, argv in _benches(options.quick):
        _run(title, argv)
    if options.local:
        _run("the local model's first requests", ["first_request.py", "--threads", "2"])
    if options.suite:
        _suite()
    print(f"\nafter: {_load()}")


if __name__ == "__main__":
    main()
