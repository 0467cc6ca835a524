"""Start-up time: `lathe --version`, `lathe --help` and `lathe run --help` against bare
`python -c pass`, sampled in turn so that a change in the machine's load touches all
of them alike. Prints each median and its ratio to the bare interpreter.

Usage: python bench/startup.py [--runs N]
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import subprocess
import sys
import time


def _sample_ms(argv: list[str]) -> float:
    started = time.perf_counter()
    subprocess.run(argv, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return (time.perf_counter() - started) * 1000


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=15)
    runs = parser.parse_args().runs
    lathe = shutil.which("lathe") or sys.exit("lathe is not installed: pip install -e .")
    commands = {
        "python -c pass": [sys.executable, "-c", "pass"],
        "lathe --version": [lathe, "--version"],
        "lathe --help": [lathe, "--help"],
        "lathe run --help": [lathe, "run", "--help"],
    }
    samples: dict[str, list[float]] = {label: [] for label in commands}
    for _ in range(runs):
        for label, argv in commands.items():
            samples[label].append(_sample_ms(argv))
    baseline = statistics.median(samples["python -c pass"])
    for label, values in samples.items():
        ms = statistics.median(values)
        print(f"{label:<19} {ms:7.1f} ms  {ms / baseline:4.2f}x bare python (median of {runs})")


if __name__ == "__main__":
    main()
