"""Start-up time: `lathe --version` and `lathe run --help` against bare `python -c pass`.

Usage: python bench/startup.py [--runs N]
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import subprocess
import sys
import time


def _median_ms(argv: list[str], runs: int) -> float:
    samples = []
    for _ in range(runs):
        started = time.perf_counter()
        subprocess.run(argv, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        samples.append((time.perf_counter() - started) * 1000)
    return statistics.median(samples)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=15)
    runs = parser.parse_args().runs
    lathe = shutil.which("lathe") or sys.exit("lathe is not installed: pip install -e .")
    baseline = _median_ms([sys.executable, "-c", "pass"], runs)
    print(f"python -c pass      {baseline:7.1f} ms (median of {runs})")
    for label, argv in (
        ("lathe --version", [lathe, "--version"]),
        ("lathe run --help", [lathe, "run", "--help"]),
    ):
        ms = _median_ms(argv, runs)
        print(f"{label:<19} {ms:7.1f} ms  (+{ms - baseline:.1f} ms over bare python)")


if __name__ == "__main__":
    main()
