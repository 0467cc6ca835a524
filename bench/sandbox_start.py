"""What starting one sandboxed command costs, by workspace size, with and without deny
rules (the masks are found by walking the workspace when each command starts).

Usage: python bench/sandbox_start.py [--runs N] [--files 0,10000,50000]

Prints, per workspace size: the time to build the bwrap argv (the walk) and the median
wall time of `true` through BubblewrapExecutor, with no rules and with three deny rules.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import tempfile
import time
from pathlib import Path

from lathe.exec.bwrap import BubblewrapExecutor, check_bubblewrap, sandbox_argv

RULES = (".env", "secrets/", "*.pem")


def _workspace(root: Path, files: int) -> Path:
    per_folder = 100
    for n in range(files):
        folder = root / "node_modules" / f"p{n // per_folder}"
        if n % per_folder == 0:
            folder.mkdir(parents=True)
        (folder / f"f{n % per_folder}.js").touch()
    (root / "sub").mkdir(parents=True)
    (root / "sub" / ".env").write_text("KEY=1\n")
    return root


def _argv_ms(root: Path, rules: tuple[str, ...], runs: int) -> float:
    samples = []
    for _ in range(runs):
        started = time.perf_counter()
        sandbox_argv("bwrap", root, root, network=False, deny_read=rules, deny_write=rules)
        samples.append((time.perf_counter() - started) * 1000)
    return statistics.median(samples)


async def _command_ms(root: Path, rules: tuple[str, ...], runs: int) -> float:
    executor = BubblewrapExecutor(root, deny_read=rules, deny_write=rules)
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
    print(f"{'files':>7}  {'rules':>5}  {'argv (walk) ms':>14}  {'`true` ms':>9}")
    for files in (int(n) for n in args.files.split(",")):
        with tempfile.TemporaryDirectory(prefix="lathe-bench-") as tmp:
            root = _workspace(Path(tmp) / "ws", files)
            for rules in ((), RULES):
                argv = _argv_ms(root, rules, args.runs)
                command = asyncio.run(_command_ms(root, rules, args.runs))
                print(f"{files:>7}  {len(rules):>5}  {argv:>14.1f}  {command:>9.1f}")


if __name__ == "__main__":
    main()
