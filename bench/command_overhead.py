"""Per-command cost of each executor: N runs of `true`, median and mean wall time.

`true` does nothing, so what is measured is starting the process, collecting its output
and its exit, and whatever lathe wraps around the command: no sandbox under the
supervisor (the default in the `full` and `read-only` modes) and without it (the bare
process group), the bubblewrap sandbox, gVisor (`--sandbox gvisor`) and a container
(`--sandbox container`: podman with runsc as its runtime, the one that works here). A
sandbox that cannot run here is reported.

Usage: python bench/command_overhead.py [--runs N]
"""

from __future__ import annotations

import argparse
import asyncio
import functools
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from lathe.exec.base import Executor
from lathe.exec.container import ContainerSpec
from lathe.exec.local import LocalExecutor
from lathe.exec.sandboxes import ENGINES, sandbox_status, sandboxed_executor


async def _samples_ms(make: Callable[[Path], Executor], runs: int) -> list[float]:
    samples = []
    with tempfile.TemporaryDirectory() as tmp:
        workspace = Path(tmp)
        executor = make(workspace)
        try:
            for _ in range(runs + 1):  # the first run warms caches (or starts) and is dropped
                started = time.perf_counter()
                result = await executor.run(
                    "true", cwd=workspace, timeout=30, max_output_bytes=10_000, spill_dir=workspace
                )
                samples.append((time.perf_counter() - started) * 1000)
                assert result.exit_code == 0, result.output
        finally:
            close = getattr(executor, "aclose", None)
            if close is not None:
                await close()
    return samples[1:]


# The container sandbox that works on these machines (docker has no daemon here, and
# podman's crun cannot set its rlimits): podman with gVisor's runsc as its runtime.
_CONTAINER = ContainerSpec(
    engine="podman",
    rootfs="/",
    engine_args=("--runtime", "runsc", "--runtime-flag", "ignore-cgroups",
                 "--runtime-flag", "network=none"),
)  # fmt: skip


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
    _report("none, supervised (default)", asyncio.run(_samples_ms(lambda _: LocalExecutor(), runs)))
    bare = LocalExecutor(supervise=False)
    _report("none, supervise=False", asyncio.run(_samples_ms(lambda _: bare, runs)))
    for engine in ENGINES:
        container = _CONTAINER if engine == "container" else None
        status = sandbox_status(engine, container)
        label = "container (podman, runsc)" if container else engine
        if not status.available:
            print(f"{label:<28} not measured: {status.message}")
            continue
        make = functools.partial(sandboxed_executor, engine, container=container)
        samples = asyncio.run(_samples_ms(make, runs))
        _report(label, samples)


if __name__ == "__main__":
    main()
