"""Per-command cost of `LocalExecutor`: N runs of `true`, median and mean wall time.

`true` does nothing, so what is measured is starting the process, collecting its output
and its exit, and whatever lathe wraps around the command: the supervisor (the default,
used in the `full` and `read-only` modes) against `supervise=False` (the bare process
group, as used inside the sandbox, whose PID namespace holds the tree instead).

Usage: python bench/command_overhead.py [--runs N]
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import tempfile
import time
from pathlib import Path

from lathe.exec.local import LocalExecutor


async def _samples_ms(executor: LocalExecutor, runs: int) -> list[float]:
    samples = []
    with tempfile.TemporaryDirectory() as tmp:
        workspace = Path(tmp)
        for _ in range(runs + 1):  # the first run warms caches and is dropped
            started = time.perf_counter()
            result = await executor.run(
                "true", cwd=workspace, timeout=30, max_output_bytes=10_000, spill_dir=workspace
            )
            samples.append((time.perf_counter() - started) * 1000)
            assert result.exit_code == 0, result.output
    return samples[1:]


def _report(label: str, samples: list[float]) -> None:
    print(
        f"{label:<28} median {statistics.median(samples):6.1f} ms   "
        f"mean {statistics.fmean(samples):6.1f} ms   min {min(samples):6.1f} ms"
    )


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=50)
    runs = parser.parse_args().runs
    print(f"{runs} runs of `true` per executor")
    _report("supervised (default)", asyncio.run(_samples_ms(LocalExecutor(), runs)))
    bare = LocalExecutor(supervise=False)
    _report("supervise=False", asyncio.run(_samples_ms(bare, runs)))


if __name__ == "__main__":
    main()
