"""What the local model reads before it answers: the first two requests of each task,
their token counts, and how long llama-server takes to read them.

For each task of a folder (the `../shared/tasks` format), `lathe run` works on a copy,
as `lathe batch` runs it, against the scripted fake server (tests/fakes/openai_server.py)
configured as the local model is (its profile, window and output limit), so the requests
are exactly what the local model would be sent. The fake model answers the first
request with a bash call running the task's check, and the second with a short answer.

The two request bodies are then sent as they are to a real llama-server serving the
model (`--model`, started here and stopped at the end; it must be installed):
- first request: its prompt tokens, and the time llama-server takes to read it cold
  (the slot is flushed first) — the wait before the first output token;
- second request: its prompt tokens, and how many of them the server had to read
  (the rest came from its prompt cache, because the first request is its prefix).

Without the server (`--no-server`) only lathe's own estimate is printed.

Usage: python bench/first_request.py [TASKS] [--model local/1.5b] [--only ID ...]
       [--no-server] [--threads N]
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
import urllib.request
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from tests.fakes.openai_server import Call, FakeOpenAIServer, Reply  # noqa: E402

from lathe.batch.tasks import BatchTask, load_tasks  # noqa: E402


def _user_config(base_url: str, wire_id: str, ctx_size: int) -> str:
    """The local model's settings (ui/setup._local_model) as a [models] entry."""
    return (
        'model = "bench-local"\nprofile = "local"\n'
        f'[models.bench-local]\nprovider = "llamacpp"\nid = "{wire_id}"\n'
        f"context_window = {ctx_size}\nmax_output_tokens = {ctx_size // 8}\n"
        f'[providers.llamacpp]\nbase_url = "{base_url}"\n'
    )


def capture(task: BatchTask, wire_id: str, ctx_size: int) -> list[dict]:
    """The first two chat request bodies lathe sends for `task`."""
    with tempfile.TemporaryDirectory(prefix="first-request-") as scratch, FakeOpenAIServer(
        models=(wire_id,)
    ) as server:
        work, home, xdg = Path(scratch, "work"), Path(scratch, "home"), Path(scratch, "xdg")
        shutil.copytree(task.repo, work, symlinks=True)
        (xdg / "lathe").mkdir(parents=True)
        (xdg / "lathe" / "config.toml").write_text(_user_config(server.base_url, wire_id, ctx_size))
        server.enqueue(Reply(calls=[Call("bash", {"command": task.verify})]), Reply("Done."))
        env = {**os.environ, "LATHE_HOME": str(home), "XDG_CONFIG_HOME": str(xdg)}
        subprocess.run(
            [sys.executable, "-m", "lathe", "run", "--json", "-C", str(work), "--max-turns", "2",
             "--verify", task.verify],
            input=task.task, capture_output=True, text=True, env=env, timeout=300, check=False,
        )  # fmt: skip
        return server.chat_bodies()[:2]


def _post(base_url: str, body: dict) -> dict:
    request = urllib.request.Request(
        f"{base_url}/chat/completions",
        data=json.dumps(body).encode(),
        headers={"Content-Type": "application/json"},
    )
    with urllib.request.urlopen(request, timeout=900) as response:
        return json.load(response)


def _measure(base_url: str, body: dict) -> tuple[int, int, float]:
    """(prompt tokens, tokens the server read, seconds it took to read them)."""
    body = {**body, "stream": False, "max_tokens": 1, "cache_prompt": True}
    body.pop("stream_options", None)
    answer = _post(base_url, body)
    timings = answer.get("timings", {})
    seconds = timings.get("prompt_ms", 0) / 1000
    return answer["usage"]["prompt_tokens"], timings.get("prompt_n", -1), seconds


def _flush(base_url: str, model: str) -> None:
    _post(base_url, {"model": model, "messages": [{"role": "user", "content": "Hi."}],
                     "max_tokens": 1})  # fmt: skip


def _estimate(body: dict) -> int:
    from lathe.agent.context import estimate_tokens

    return estimate_tokens(json.dumps(body["messages"]) + json.dumps(body.get("tools", [])))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("tasks", nargs="?", default=str(REPO.parent / "shared" / "tasks"))
    parser.add_argument("--model", default="local/1.5b")
    parser.add_argument("--only", nargs="*", default=None)
    parser.add_argument("--no-server", action="store_true")
    parser.add_argument("--threads", type=int, default=None)
    args = parser.parse_args()

    from lathe.local import ServerOptions, ensure_local_server, get_model

    known = get_model(args.model)
    ctx_size = ServerOptions().ctx_size
    tasks = [t for t in load_tasks(Path(args.tasks)) if not args.only or t.id in args.only]
    captured = {task.id: capture(task, known.wire_id, ctx_size) for task in tasks}
    if args.no_server:
        print(f"{'task':32} {'1st request (est. tokens)':>26} {'2nd':>8}")
        for task_id, bodies in captured.items():
            sizes = [str(_estimate(b)) for b in bodies]
            print(f"{task_id:32} {sizes[0]:>26} {(sizes[1:] or ['-'])[0]:>8}")
        return
    started = time.perf_counter()
    server = ensure_local_server(args.model, options=ServerOptions(threads=args.threads))
    print(f"llama-server up in {time.perf_counter() - started:.1f} s at {server.base_url}")
    print(f"{'task':32} {'1st: tokens':>11} {'read s':>7} {'tok/s':>6}   {'2nd: tokens':>11} "
          f"{'read':>6} {'s':>6}")  # fmt: skip
    firsts, waits = [], []
    for task_id, bodies in captured.items():
        if not bodies:
            print(f"{task_id:32} (lathe sent no request)")
            continue
        _flush(server.base_url, server.model)
        tokens, read, seconds = _measure(server.base_url, bodies[0])
        firsts.append(tokens)
        waits.append(seconds)
        line = f"{task_id:32} {tokens:>11} {seconds:>7.1f} {read / max(seconds, 1e-9):>6.1f}"
        if len(bodies) > 1:
            tokens2, read2, seconds2 = _measure(server.base_url, bodies[1])
            line += f"   {tokens2:>11} {read2:>6} {seconds2:>6.1f}"
        print(line, flush=True)
    if firsts:
        firsts.sort()
        waits.sort()
        print(f"median first request {firsts[len(firsts) // 2]} tokens (max {firsts[-1]}), "
              f"read in {waits[len(waits) // 2]:.1f} s (max {waits[-1]:.1f} s)")  # fmt: skip


if __name__ == "__main__":
    main()
