"""Run lathe on a task set and score it by the tasks' own verify commands.

Task format: ../shared/tasks/README.md. For each task folder, `repo/` is copied
byte-exact to a fresh temporary directory, `lathe run --json` works there on the text of
`TASK.md`, and then this script runs `task.json`'s verify command itself: solved means
that command exits 0 after the run (lathe's own claim is recorded, not trusted).
`fix.patch` and `task.json`'s `kind` never reach the agent.

    python bench/eval.py --model local/1.5b --max-turns 15
    python bench/eval.py --base-url http://127.0.0.1:8080/v1 --model qwen --only chunked_drops_tail
    python bench/eval.py --tasks bench/examples --model local --repeat 5 \
        --lathe-arg=--deny --lathe-arg='edit(tests/**)'     # the README's example, 5 times
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parent.parent
DEFAULT_TASKS = REPO_ROOT.parent / "shared" / "tasks"
TAIL_CHARS = 4000


@dataclass
class TaskResult:
    task: str
    attempt: int = 1
    solved: bool = False
    status: str = "unknown"
    """lathe's own run status (verified, unverified, failed, stuck, max_turns, ...), or
    "timeout" / "crashed" / "no-result" when the run did not report one."""
    exit_code: int | None = None
    turns: int | None = None
    tokens_in: int | None = None
    tokens_out: int | None = None
    wall_s: float = 0.0
    verify_exit: int | None = None
    verify_s: float = 0.0
    tool_calls: int = 0
    tools: dict[str, int] = field(default_factory=dict)
    lathe_attempts: int = 0
    """Attempts lathe made (`--attempts`): turns and tokens are summed over them."""
    reason: str = ""
    workdir: str = ""
    stderr_tail: str = ""
    verify_tail: str = ""


def _tail(text: str, limit: int = TAIL_CHARS) -> str:
    return text if len(text) <= limit else "..." + text[-limit:]


def _kill_group(proc: subprocess.Popen) -> None:
    from lathe.exec.supervision import stop_group

    stop_group(proc.pid, grace=10, gone=lambda: proc.poll() is not None)
    proc.wait()


def _run(cmd, *, cwd: Path, timeout: float, shell: bool = False, env=None):
    """Run in its own process group; on timeout kill the whole group.
    Returns (exit code or None on timeout, stdout, stderr, seconds)."""
    started = time.monotonic()
    proc = subprocess.Popen(
        cmd,
        cwd=cwd,
        shell=shell,
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        encoding="utf-8",
        errors="replace",
        start_new_session=True,
    )
    try:
        out, err = proc.communicate(timeout=timeout)
        code: int | None = proc.returncode
    except subprocess.TimeoutExpired:
        _kill_group(proc)
        out, err = proc.communicate()
        code = None
    except BaseException:
        _kill_group(proc)
        raise
    return code, out or "", err or "", time.monotonic() - started


def _event_type(event: dict) -> str:
    return str(event.get("type") or event.get("event") or event.get("kind") or "")


def _parse_events(stdout: str, result: TaskResult) -> None:
    """Fill status, turns, tokens and tool counts from lathe's JSON lines."""
    usage_in = usage_out = 0
    saw_usage = False
    turns_seen = 0
    for line in stdout.splitlines():
        line = line.strip()
        if not line.startswith("{"):
            continue
        try:
            event = json.loads(line)
        except ValueError:
            continue
        if not isinstance(event, dict):
            continue
        kind = _event_type(event)
        if kind == "turn_started":
            turns_seen += 1
        if kind in ("tool_call", "tool_started", "tool_call_started", "tool_start"):
            result.tool_calls += 1
            name = str(event.get("name") or event.get("tool") or "?")
            result.tools[name] = result.tools.get(name, 0) + 1
        usage = event.get("usage")
        if kind != "run_finished" and isinstance(usage, dict):
            usage_in += int(usage.get("input_tokens") or usage.get("prompt_tokens") or 0)
            usage_out += int(usage.get("output_tokens") or usage.get("completion_tokens") or 0)
            saw_usage = True
        if kind == "run_finished":
            result.lathe_attempts += 1
            result.status = str(event.get("status") or "unknown")
            result.turns = (result.turns or 0) + int(event.get("turns") or 0)
            result.reason = str(event.get("reason") or "")
            usage = event.get("usage")
            if isinstance(usage, dict):
                tokens_in = int(usage.get("input_tokens") or usage.get("prompt_tokens") or 0)
                tokens_out = int(usage.get("output_tokens") or usage.get("completion_tokens") or 0)
                result.tokens_in = (result.tokens_in or 0) + tokens_in
                result.tokens_out = (result.tokens_out or 0) + tokens_out
    if turns_seen > (result.turns or 0):
        result.turns = turns_seen  # an attempt did not finish (timeout): turns started
    if result.tokens_in is None and saw_usage:
        result.tokens_in, result.tokens_out = usage_in, usage_out


def run_task(
    task_dir: Path, args: argparse.Namespace, base_url: str | None, attempt: int = 1
) -> TaskResult:
    result = TaskResult(task=task_dir.name, attempt=attempt)
    spec = json.loads((task_dir / "task.json").read_text(encoding="utf-8"))
    verify = spec["verify"]
    verify_timeout = float(spec.get("timeout", 120))
    # Read bytes and decode: TASK.md is given exactly as written.
    instruction = (task_dir / "TASK.md").read_bytes().decode("utf-8")

    # A neutral name: the workspace path is in lathe's system prompt, and a small model
    # builds guessed paths out of it (seen: tests/<task name>_<suffix>/test.py).
    work = Path(tempfile.mkdtemp(prefix="lathe-eval-"))
    shutil.rmtree(work)
    shutil.copytree(task_dir / "repo", work)  # copies bytes: CRLF stays CRLF
    _make_writable(work)  # the task folders are read-only; the copy must not be
    result.workdir = str(work)

    cmd = [sys.executable, "-m", "lathe", "run", "--json", "-C", str(work)]
    if args.model:
        cmd += ["--model", args.model]
    if base_url:
        cmd += ["--base-url", base_url]
    if args.max_turns:
        cmd += ["--max-turns", str(args.max_turns)]
    if not args.no_verify_gate:
        cmd += ["--verify", verify]
    cmd += [*args.lathe_arg, instruction]

    env = dict(os.environ)
    src = str(REPO_ROOT / "src")
    env["PYTHONPATH"] = src + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    code, out, err, wall = _run(cmd, cwd=work, timeout=args.timeout_s, env=env)
    result.wall_s = wall
    result.exit_code = code
    result.stderr_tail = _tail(err)
    _parse_events(out, result)
    if code is None:
        result.status = "timeout"
    elif result.status == "unknown":
        result.status = "crashed" if code not in (0, 1) else "no-result"
        if not result.reason:
            result.reason = _tail(err.strip(), 300)
    if args.keep_events:
        (work.parent / f"{work.name}.events.jsonl").write_text(out, encoding="utf-8")
        (work.parent / f"{work.name}.stderr.txt").write_text(err, encoding="utf-8")

    vcode, vout, verr, vwall = _run(verify, cwd=work, timeout=verify_timeout, shell=True)
    result.verify_exit = vcode
    result.verify_s = vwall
    result.solved = vcode == 0
    result.verify_tail = _tail(vout + verr, 1500)
    if not args.keep:
        shutil.rmtree(work, ignore_errors=True)
    return result


def _fmt(value, width: int) -> str:
    return ("-" if value is None else str(value)).rjust(width)


def print_table(results: list[TaskResult], label: str) -> None:
    name_w = max([len("task"), *(len(r.task) for r in results)])
    header = (
        f"{'task'.ljust(name_w)}  {'solved':>6}  {'lathe status':<12}  {'att':>3}  {'turns':>5}  "
        f"{'tok in':>8}  {'tok out':>7}  {'wall s':>7}"
    )
    print(f"\n{label}")
    print(header)
    print("-" * len(header))
    for r in results:
        name = r.task if r.attempt == 1 else f"  #{r.attempt}"
        print(
            f"{name.ljust(name_w)}  {('yes' if r.solved else 'no'):>6}  {r.status:<12}  "
            f"{_fmt(r.lathe_attempts or None, 3)}  {_fmt(r.turns, 5)}  "
            f"{_fmt(r.tokens_in, 8)}  {_fmt(r.tokens_out, 7)}  {r.wall_s:7.1f}"
        )
    solved = sum(r.solved for r in results)
    turns = [r.turns for r in results if r.turns is not None]
    wall = sum(r.wall_s for r in results)
    print("-" * len(header))
    rate = 100 * solved / len(results) if results else 0.0
    attempts = max((r.attempt for r in results), default=1)
    if attempts > 1:
        per_task: dict[str, list[bool]] = {}
        for r in results:
            per_task.setdefault(r.task, []).append(r.solved)
        print("per task: " + ", ".join(f"{t} {sum(s)}/{len(s)}" for t, s in per_task.items()))
    print(
        f"solved {solved}/{len(results)} runs ({rate:.0f}%); "
        f"mean turns {sum(turns) / len(turns) if turns else 0:.1f}; "
        f"total wall {wall:.0f}s (mean {wall / max(len(results), 1):.0f}s)"
    )


def _start_local(model: str, server_args: list[str]):
    """Start (or reuse) the warm llama-server for `model`; returns how to stop it, if this
    call started it."""
    sys.path.insert(0, str(REPO_ROOT / "src"))
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


def _make_writable(root: Path) -> None:
    for path in [root, *root.rglob("*")]:
        if not path.is_symlink():
            path.chmod(path.stat().st_mode | 0o200)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tasks", type=Path, default=DEFAULT_TASKS, help="Task set folder.")
    parser.add_argument("--only", nargs="+", metavar="NAME", help="Run only these tasks.")
    parser.add_argument("--model", help="Model id passed to lathe (local, local/0.5b, ...).")
    parser.add_argument("--base-url", help="OpenAI-compatible endpoint passed to lathe.")
    parser.add_argument("--max-turns", type=int, default=20)
    parser.add_argument(
        "--repeat", type=int, default=1, metavar="N", help="Run each task N times (models sample)."
    )
    parser.add_argument(
        "--lathe-arg",
        action="append",
        default=[],
        metavar="ARG",
        help="Extra argument for `lathe run` (repeatable), e.g. --lathe-arg=--deny "
        "--lathe-arg='edit(tests/**)'.",
    )
    parser.add_argument("--timeout-s", type=float, default=600.0, help="Per task run.")
    parser.add_argument(
        "--no-verify-gate", action="store_true", help="Do not pass --verify to lathe."
    )
    parser.add_argument(
        "--server-arg",
        action="append",
        default=[],
        metavar="ARG",
        help="Extra llama-server argument when this script starts the local server "
        "(repeatable), e.g. --server-arg=--no-repack.",
    )
    parser.add_argument("--json-out", type=Path, help="Write the results as JSON here.")
    parser.add_argument("--keep", action="store_true", help="Keep the temporary workspaces.")
    parser.add_argument(
        "--keep-events",
        action="store_true",
        help="Save lathe's JSON events and stderr next to each workspace (implies --keep).",
    )
    args = parser.parse_args(argv)
    if args.keep_events:
        args.keep = True

    tasks_dir = args.tasks.resolve()
    if not tasks_dir.is_dir():
        parser.error(
            f"no task set at {tasks_dir}; pass --tasks DIR, a folder of tasks in the format "
            "of ../shared/tasks/README.md"
        )
    tasks = sorted(p for p in tasks_dir.iterdir() if p.is_dir() and (p / "task.json").is_file())
    if args.only:
        unknown = set(args.only) - {p.name for p in tasks}
        if unknown:
            parser.error(f"unknown task(s): {', '.join(sorted(unknown))}")
        tasks = [p for p in tasks if p.name in args.only]
    if not tasks:
        parser.error(f"no tasks in {tasks_dir}")

    base_url = args.base_url
    stop = None
    if base_url is None and args.model and args.model.startswith("local"):
        # Started once for all tasks; each `lathe run --model local/...` then reuses it
        # as the warm server, and sizes its window, limits and replies to the local
        # model exactly as the README's command does (a --base-url would not).
        stop = _start_local(args.model, args.server_arg)

    results: list[TaskResult] = []
    started = time.time()
    try:
        runs = [(t, n) for t in tasks for n in range(1, args.repeat + 1)]
        for task_dir, attempt in runs:
            print(f"[{len(results) + 1}/{len(runs)}] {task_dir.name} ...", file=sys.stderr)
            r = run_task(task_dir, args, base_url, attempt)
            print(
                f"    solved={r.solved} status={r.status} attempts={r.lathe_attempts} "
                f"turns={r.turns} "
                f"tools={r.tool_calls} wall={r.wall_s:.0f}s {r.reason[:120]}",
                file=sys.stderr,
            )
            results.append(r)
    finally:
        if stop is not None:
            stop()

    label = (
        f"model={args.model or '(default)'} base_url={base_url or '(default)'} "
        f"max_turns={args.max_turns} timeout_s={args.timeout_s:.0f} repeat={args.repeat} "
        f"lathe_args={' '.join(args.lathe_arg) or '-'} "
        f"verify_gate={'off' if args.no_verify_gate else 'on'}"
    )
    print_table(results, label)
    if args.json_out:
        payload = {
            "label": label,
            "started": started,
            "tasks_dir": str(tasks_dir),
            "solved": sum(r.solved for r in results),
            "total": len(results),
            "results": [asdict(r) for r in results],
        }
        args.json_out.write_text(json.dumps(payload, indent=2) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
