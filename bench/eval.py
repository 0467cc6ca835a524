"""Run lathe on a task set through `lathe batch` and print the solve rates.

A thin front to `lathe batch` (src/lathe/batch/), the one way lathe runs many tasks: this
script turns its options into a `lathe batch TASKS --out RUN_DIR ...` command, runs it
(its progress goes to stderr), then prints a table read from RUN_DIR/results.jsonl.
`lathe batch` copies each task's `repo/` fresh, runs `lathe run --json` there with the
task's verify command as the gate, and scores the task by running that command itself
with the task's tests put back: solved means it exits 0 (lathe's own claim is recorded,
never trusted). Task format: ../shared/tasks/README.md.

    python bench/eval.py --model local/1.5b --max-turns 15
    python bench/eval.py --base-url http://127.0.0.1:8080/v1 --model qwen --only chunked_drops_tail
    python bench/eval.py --tasks bench/examples --model local --repeat 5 \
        --lathe-arg=--deny --lathe-arg='edit(tests/**)'     # the README's example, 5 times

The same command with the same --out resumes (finished runs are kept);
`lathe batch report RUN_DIR` writes the HTML report of a run.
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

REPO_ROOT = Path(__file__).resolve().parent.parent
DEFAULT_TASKS = REPO_ROOT.parent / "shared" / "tasks"
TASK_LIST = "eval-tasks.jsonl"
"""The task list this script writes into the run folder for --only and --repeat."""

sys.path.insert(0, str(REPO_ROOT / "src"))


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tasks", type=Path, default=DEFAULT_TASKS, help="Task set folder.")
    parser.add_argument(
        "--only",
        action="extend",
        nargs="+",
        default=[],
        metavar="NAME",
        help="Run only these tasks (repeatable).",
    )
    parser.add_argument("--model", help="Model id passed to lathe (local, local/0.5b, ...).")
    parser.add_argument("--base-url", help="OpenAI-compatible endpoint passed to lathe.")
    parser.add_argument("--max-turns", type=int, default=20, help="Model turns per task.")
    parser.add_argument(
        "--repeat",
        type=int,
        default=1,
        metavar="K",
        help="Run each task K times (models sample); the runs are TASK#1 .. TASK#K.",
    )
    parser.add_argument("--workers", type=int, default=1, help="Tasks running at once.")
    parser.add_argument(
        "--timeout-s",
        type=float,
        default=600.0,
        metavar="S",
        help="Seconds one task may take (`lathe batch --max-wall`).",
    )
    parser.add_argument(
        "--lathe-arg",
        action="append",
        default=[],
        metavar="ARG",
        help="Extra argument for every `lathe run` (repeatable), e.g. --lathe-arg=--deny "
        "--lathe-arg='edit(tests/**)'.",
    )
    parser.add_argument(
        "--batch-arg",
        action="append",
        default=[],
        metavar="ARG",
        help="Extra argument for `lathe batch` (repeatable), e.g. --batch-arg=--attempts "
        "--batch-arg=3, --batch-arg=--retry-errors.",
    )
    parser.add_argument(
        "--out",
        type=Path,
        metavar="RUN_DIR",
        help="Run folder (default: a fresh one under the temporary directory). "
        "The same command with the same --out resumes.",
    )
    parser.add_argument(
        "--keep", action="store_true", help="Keep each task's working copy (`lathe batch --keep`)."
    )
    parser.add_argument(
        "--server-arg",
        action="append",
        default=[],
        metavar="ARG",
        help="Extra llama-server argument when this script starts the local server "
        "(repeatable), e.g. --server-arg=--no-repack.",
    )
    args = parser.parse_args(argv)
    if args.repeat < 1 or args.workers < 1:
        parser.error("--repeat and --workers take a whole number of at least 1")
    return args


def select_tasks(args: argparse.Namespace) -> list[Any]:
    """The task set's tasks (`lathe.batch.tasks.BatchTask`), only the --only ones if given."""
    from lathe.batch.tasks import load_tasks
    from lathe.errors import UsageError

    if not args.tasks.is_dir():
        raise UsageError(
            f"no task set at {args.tasks.resolve()}; pass --tasks DIR, a folder of tasks in "
            "the format of ../shared/tasks/README.md"
        )
    tasks = load_tasks(args.tasks.resolve())
    unknown = set(args.only) - {t.id for t in tasks}
    if unknown:
        raise UsageError(f"unknown task(s): {', '.join(sorted(unknown))}")
    return [t for t in tasks if t.id in args.only] if args.only else tasks


def task_source(
    args: argparse.Namespace, tasks: list[Any], out: Path
) -> tuple[Path, list[dict[str, Any]]]:
    """What `lathe batch` reads, and the runs it holds in order (`id`, `task`, `repeat`):
    the task folder itself, or — for --only or --repeat — a JSONL list (the format of
    `lathe.batch.tasks`) written into the run folder, so the same command resumes."""
    if not args.only and args.repeat == 1:
        return args.tasks.resolve(), [{"id": t.id, "task": t.id, "repeat": 1} for t in tasks]
    runs, lines = [], []
    for task in tasks:
        spec = {k: v for k, v in task.as_json().items() if k != "fingerprint"}
        for n in range(1, args.repeat + 1):
            run_id = task.id if args.repeat == 1 else f"{task.id}#{n}"
            runs.append({"id": run_id, "task": task.id, "repeat": n})
            lines.append(json.dumps({**spec, "id": run_id}, ensure_ascii=False))
    listing = out / TASK_LIST
    listing.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return listing, runs


def batch_argv(args: argparse.Namespace, source: Path, out: Path) -> list[str]:
    argv = [sys.executable, "-m", "lathe", "batch", str(source), "--out", str(out)]
    argv += ["--workers", str(args.workers), "--max-wall", str(args.timeout_s)]
    for flag, value in (
        ("--model", args.model),
        ("--base-url", args.base_url),
        ("--max-turns", args.max_turns),
    ):
        if value is not None:
            argv += [flag, str(value)]
    if args.keep:
        argv.append("--keep")
    argv += [f"--lathe-arg={arg}" for arg in args.lathe_arg]
    return argv + args.batch_arg


def run_batch(argv: list[str]) -> int:
    """`lathe batch`, its progress on this stderr; its own table (stdout) is left out."""
    env = dict(os.environ)
    src = str(REPO_ROOT / "src")
    env["PYTHONPATH"] = src + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    proc = subprocess.Popen(argv, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE)
    try:
        proc.communicate()
    except KeyboardInterrupt:
        proc.communicate()  # Ctrl-C reached it too: it stops its tasks and says so
    return proc.returncode


def read_results(out: Path) -> dict[str, dict[str, Any]]:
    from lathe.batch.results import RunFolder

    return RunFolder(out).results()


def _fmt(value: Any, width: int) -> str:
    return ("-" if value is None else str(value)).rjust(width)


def print_table(runs: list[dict[str, Any]], lines: dict[str, dict[str, Any]], label: str) -> None:
    done = [(run, lines[run["id"]]) for run in runs if run["id"] in lines]
    # A task whose check passed before any change measures nothing: lathe batch leaves
    # it out of the solve rate, and so do the rates here (its row still shows).
    counted = [(run, line) for run, line in done if line.get("status") != "passed_before"]
    name_w = max([len("task"), *(len(run["id"]) for run in runs)])
    header = (
        f"{'task'.ljust(name_w)}  {'solved':>6}  {'result':<10}  {'lathe status':<12}  "
        f"{'att':>3}  {'turns':>5}  {'tok in':>8}  {'tok out':>7}  {'wall s':>7}"
    )
    print(f"\n{label}")
    print(header)
    print("-" * len(header))
    for run, line in done:
        tokens = line.get("tokens") or {}
        print(
            f"{run['id'].ljust(name_w)}  {('yes' if line.get('solved') else 'no'):>6}  "
            f"{line.get('status', '?'):<10}  {line.get('lathe_status') or '-':<12}  "
            f"{_fmt(line.get('attempts') or None, 3)}  {_fmt(line.get('turns'), 5)}  "
            f"{_fmt(tokens.get('input'), 8)}  {_fmt(tokens.get('output'), 7)}  "
            f"{float(line.get('wall_s') or 0):7.1f}"
        )
    print("-" * len(header))
    if any(run["repeat"] > 1 for run in runs):
        per_task: dict[str, list[bool]] = {}
        for run, line in counted:
            per_task.setdefault(run["task"], []).append(bool(line.get("solved")))
        print("per task: " + ", ".join(f"{t} {sum(s)}/{len(s)}" for t, s in per_task.items()))
    per_kind: dict[str, list[bool]] = {}
    for _run, line in counted:
        per_kind.setdefault(line.get("kind") or "-", []).append(bool(line.get("solved")))
    kind_w = max([len("kind"), *(len(k) for k in per_kind)])
    print(f"\n{'kind'.ljust(kind_w)}  {'solved':>8}  {'rate':>5}")
    for kind, solved in sorted(per_kind.items()):
        rate = 100 * sum(solved) / len(solved)
        print(f"{kind.ljust(kind_w)}  {f'{sum(solved)}/{len(solved)}':>8}  {rate:4.0f}%")

    scored = [line for _run, line in counted]  # the rate's; the spend is every run's
    results = [line for _run, line in done]
    solved = sum(bool(line.get("solved")) for line in scored)
    turns = [line["turns"] for line in results if line.get("turns") is not None]
    wall = sum(float(line.get("wall_s") or 0) for line in results)
    tokens_in = sum(int((line.get("tokens") or {}).get("input") or 0) for line in results)
    tokens_out = sum(int((line.get("tokens") or {}).get("output") or 0) for line in results)
    rate = 100 * solved / len(scored) if scored else 0.0
    print(
        f"\nsolved {solved}/{len(scored)} runs ({rate:.0f}%); "
        f"mean turns {sum(turns) / len(turns) if turns else 0:.1f}; "
        f"tokens in {tokens_in:,} out {tokens_out:,}; "
        f"total wall {wall:.0f}s (mean {wall / max(len(results), 1):.0f}s)"
    )
    errors = sum(line.get("status") == "error" for line in results)
    claimed = sum(bool(line.get("false_verified")) for line in results)
    if errors:
        print(f"{errors} ended in an error, not the agent's doing (--batch-arg=--retry-errors)")
    if len(counted) < len(done):
        print(f"{len(done) - len(counted)} passed its check before any change (not counted)")
    if claimed:
        print(f"{claimed} claimed verified but failed the task's check")
    if len(done) < len(runs):
        print(f"{len(runs) - len(done)} not run yet: the same command resumes")


def _start_local(model: str, server_args: list[str]):
    """Start (or reuse) the warm llama-server for `model`; returns how to stop it, if this
    call started it."""
    from lathe.local.server import ServerOptions, read_warm, start_warm, stop_warm

    name = model.split("/", 1)[1] if "/" in model else "1.5b"
    before = read_warm()
    options = ServerOptions(extra_args=tuple(server_args))
    warm, reused = start_warm(name, options=options)
    started_here = not reused and (before is None or before.pid != warm.pid)
    print(
        f"local server: local/{warm.model} at {warm.base_url} "
        f"({'reused' if reused else 'started'}, pid {warm.pid}); every lathe run reuses it",
        file=sys.stderr,
    )
    return stop_warm if started_here else None


def main(argv: list[str] | None = None) -> int:
    from lathe.errors import UsageError

    args = parse_args(argv)
    try:
        tasks = select_tasks(args)
    except UsageError as exc:
        print(f"eval: {exc}", file=sys.stderr)
        return 2
    out = (args.out or Path(tempfile.mkdtemp(prefix="lathe-eval-"))).resolve()
    out.mkdir(parents=True, exist_ok=True)
    source, runs = task_source(args, tasks, out)
    argv_batch = batch_argv(args, source, out)
    print("eval: " + shlex.join(["python", *argv_batch[1:]]), file=sys.stderr)

    stop = None
    if args.base_url is None and args.model and args.model.startswith("local"):
        # Started once for all tasks; each `lathe run --model local/...` then reuses it
        # as the warm server, and sizes its window, limits and replies to the local
        # model exactly as the README's command does (a --base-url would not).
        stop = _start_local(args.model, args.server_arg)
    try:
        code = run_batch(argv_batch)
    finally:
        if stop is not None:
            stop()

    label = (
        f"model={args.model or '(default)'} base_url={args.base_url or '(default)'} "
        f"max_turns={args.max_turns} timeout_s={args.timeout_s:g} repeat={args.repeat} "
        f"workers={args.workers} lathe_args={' '.join(args.lathe_arg) or '-'}"
    )
    lines = read_results(out)
    if any(run["id"] in lines for run in runs):
        print_table(runs, lines, label)
    print(f"run folder: {out} (`lathe batch report {out}` for the HTML report)")
    return code


if __name__ == "__main__":
    sys.exit(main())
