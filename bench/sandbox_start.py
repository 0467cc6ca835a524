"""What starting one sandboxed command costs, by workspace size: the masks and
read-only mounts are found by walking the workspace when each command starts.

Usage: python bench/sandbox_start.py [--runs N] [--files 0,10000,50000]

Prints, per workspace size and rule set (none; the default protected paths; those plus
three read-deny rules): the median time to build the bwrap argv (the walk) and the
median wall time of `true` through BubblewrapExecutor. The tree is left to settle for
2 s first, as a workspace is between commands (folders changed more recently are always
listed again).
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import tempfile
import time
from pathlib import Path

from lathe.config.schema import PermissionsConfig
from lathe.exec.bwrap import BubblewrapExecutor, bwrap_argv, check_bubblewrap
from lathe.exec.view import sandbox_view
from lathe.policy.rules import protected_patterns

PROTECTED = protected_patterns(PermissionsConfig().protect)
DENY_READ = (".env", "secrets/", "*.pem")


def _workspace(root: Path, files: int) -> Path:
    per_folder = 100
    for n in range(files):
        folder = root / "node_modules" / f"p{n // per_folder}"
        if n % per_folder == 0:
            folder.mkdir(parents=True)
        (folder / f"f{n % per_folder}.js").touch()
    (root / "sub").mkdir(parents=True)
    (root / "sub" / ".env").write_text("KEY=1\n")
    time.sleep(2.1)  # folders changed in the last 2 s are always listed again
    return root


def _argv_ms(
    root: Path, rules: tuple[tuple[str, ...], tuple[str, ...]], runs: int
) -> tuple[float, float]:
    """(the first call, which walks the whole tree; the median of the later ones)"""
    write, read = rules
    samples = []
    for _ in range(runs):
        started = time.perf_counter()
        bwrap_argv(
            "bwrap", sandbox_view(root, root, network=False, deny_read=read, deny_write=write)
        )
        samples.append((time.perf_counter() - started) * 1000)
    return samples[0], statistics.median(samples[1:])


async def _command_ms(
    root: Path, rules: tuple[tuple[str, ...], tuple[str, ...]], runs: int
) -> float:
    write, read = rules
    executor = BubblewrapExecutor(root, deny_read=read, deny_write=write)
    samples = []
    for _ in range(runs):
        started = time.perf_counter()
        result = await executor.run(
            "true", cwd=root, timeout=30, max_output_bytes=1000, spill_dir=root / ".spill"
        )
        assert result.exit_code == 0, result.output
        samples.append((time.perf_counter() - started) * 1000)
    return statistics.median(samples)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=15)
    parser.add_argument("--files", default="0,10000,50000")
    args = parser.parse_args()
    status = check_bubblewrap()
    if not status.available:
        raise SystemExit(status.message)
    sets = {"none": ((), ()), "protected": (PROTECTED, ()), "+3 deny": (PROTECTED, DENY_READ)}
    header = f"{'files':>7}  {'rules':>10}  {'first walk ms':>13}  {'walk ms':>7}  {'`true` ms':>9}"
    print(header)
    for files in (int(n) for n in args.files.split(",")):
        with tempfile.TemporaryDirectory(prefix="lathe-bench-") as tmp:
            root = _workspace(Path(tmp) / "ws", files)
            for name, rules in sets.items():
                first, walk = _argv_ms(root, rules, args.runs)
                command = asyncio.run(_command_ms(root, rules, args.runs))
                print(f"{files:>7}  {name:>10}  {first:>13.1f}  {walk:>7.1f}  {command:>9.1f}")


if __name__ == "__main__":
    main()
