"""lathe's own time on a whole task: the calculator example, fixed by a scripted model.

`lathe run --verify` as a subprocess against the fake OpenAI-compatible server
(tests/fakes/openai_server.py): 5 model replies, 1 pytest run by the model and 2 by the
gate (the baseline and the final check). What it prints per run is the wall time, the
time of the commands it ran (the `duration_ms` of its bash calls and of its verify runs,
from `--json`), and the difference: lathe's own time, start-up, the SDK import and the
checkpoints included. Medians of N runs.

Usage: python bench/task_overhead.py [--runs N]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from tests.e2e.test_calculator import EXAMPLE, fixing_script  # noqa: E402
from tests.fakes.openai_server import FakeOpenAIServer  # noqa: E402

VERIFY = "python -m pytest -q -p no:cacheprovider"


def own_cpu_seconds(pid: int) -> float:
    """CPU seconds the process itself used, all its threads, not its children: read from
    /proc once it has exited and before it is reaped. Unlike wall time this figure holds
    on a loaded machine."""
    while True:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        if fields[0] == "Z":
            return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
        time.sleep(0.002)


def one_run(server: FakeOpenAIServer, scratch: Path) -> tuple[float, float, float, float]:
    """(wall seconds, seconds spent in the commands lathe ran, seconds the first model
    request took: where an SDK import not hidden would show, lathe's own CPU seconds)
    for one task."""
    ws = scratch / "calc"
    shutil.rmtree(ws, ignore_errors=True)
    shutil.copytree(EXAMPLE, ws)
    server.enqueue(*fixing_script())
    env = {k: v for k, v in os.environ.items() if not k.startswith(("LATHE_", "OPENAI_"))}
    env.update(OPENAI_API_KEY="sk-bench", LATHE_HOME=str(scratch / "home"))
    argv = [sys.executable, "-m", "lathe", "run", "--json", "--model", "m", "--base-url",
            server.base_url, "-C", str(ws), "--approval", "full", "--verify", VERIFY,
            "Make the failing tests pass"]  # fmt: skip
    started = time.perf_counter()
    events, arrived = [], []
    with subprocess.Popen(
        argv, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    ) as process:
        assert process.stdout is not None and process.stderr is not None
        for line in process.stdout:
            events.append(json.loads(line))
            arrived.append(time.perf_counter())
        errors = process.stderr.read()
        own_cpu = own_cpu_seconds(process.pid)
    wall = time.perf_counter() - started
    if process.returncode != 0:
        raise SystemExit(f"lathe run failed ({process.returncode}): {errors[-2000:]}")
    commands = sum(
        e["duration_ms"] / 1000
        for e in events
        if e["type"] == "tool_finished" and e["name"] == "bash"
    )
    # A verify run's own duration where the events carry it (older lathe: the time
    # between its start and end events, which flatters that version a little).
    for index, event in enumerate(events):
        if event["type"] == "verify_finished":
            if "duration_ms" in event:
                commands += event["duration_ms"] / 1000
            else:
                began = max(i for i in range(index) if events[i]["type"] == "verify_started")
                commands += arrived[index] - arrived[began]
    first_request = next(e["latency_ms"] for e in events if e["type"] == "model_request")
    return wall, commands, first_request / 1000, own_cpu


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    walls, own, first, cpu = [], [], [], []
    with tempfile.TemporaryDirectory() as tmp, FakeOpenAIServer() as server:
        for _ in range(args.runs):
            wall, commands, first_request, own_cpu = one_run(server, Path(tmp))
            walls.append(wall)
            own.append(wall - commands)
            first.append(first_request)
            cpu.append(own_cpu)
    print(f"calculator task, scripted model: median of {args.runs}")
    print(f"  wall               {statistics.median(walls):.2f} s")
    print(f"  lathe's own time   {statistics.median(own):.2f} s (wall minus the commands it ran)")
    print(f"  lathe's own CPU    {statistics.median(cpu):.2f} s (its process, not the commands)")
    print(f"  first model call   {statistics.median(first) * 1000:.0f} ms (SDK import included)")


if __name__ == "__main__":
    main()
