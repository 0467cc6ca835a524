"""`lathe serve` under load: N concurrent sessions, each a T-turn task with tool calls
and one command, against the scripted fake model over real HTTP.

Three processes: the fake model (tests/fakes/openai_server.py, run by this file with
`--fake-model`, so that its threads do not share a GIL with the clients), `lathe serve
--port 0` with its own LATHE_HOME, and this one, the clients: one SSE stream per
session (asyncio + httpx), opened before the task is posted.

The fake answers by the session's marker (`LOAD0017`, in the task and the workspace's
file names) and the number of assistant messages the request already holds: turns
1..T-1 are a `read` of a different file or offset each (so the stall rules see no
repetition), one of them a `bash` command (`printf` of the marker, checked in the next
request's tool result), turn T a final answer. Each reply's text is "<marker> tNN
sent=<time.time()>", written by the fake as it starts the reply; the latency is the
time.time() at which the SSE client receives the event carrying it (the `text_delta`,
and the whole `assistant_reply`) minus that (one machine, one clock).

Checks (exit 1 when one fails): each session's event ids are 1..n with none missing or
repeated, and n is the journal's `last_event_id`; no event carries another session's
marker (nor does any model request); every run ended `unverified` after T turns with T
replies, the command's output reached the model. The server's RSS is sampled: at start,
after its first session (imports done), with all N idle, at the peak, after the runs;
"per idle session" is (all idle - first) / (N - 1). The server's limits stay at their
defaults (serve.max_model_calls 8 per endpoint, max_commands the CPU count), so most
model calls wait for a slot (`queued` events): that wait precedes the request, so it
is not in the latency.

Usage: python bench/serve_load.py [--sessions 100] [--turns 20] [--dir /dev/shm]
       python bench/serve_load.py --quick          (a smoke check: 5 sessions x 5 turns)
About 40 s at 100 x 20 on this project's 2-core machine (25-30 s of it the runs).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
MARKER = re.compile(r"LOAD(\d{4})")
SENT = re.compile(r"(LOAD\d{4}) (t\d+|done) sent=(\d+\.\d+)")
FILES = 4  # files per workspace, each read at several offsets
LINES = 60


def _marker(index: int) -> str:
    return f"LOAD{index:04d}"


def _bash_turn(turns: int) -> int:
    return max(1, turns // 2) if turns > 1 else 0


# the fake model (its own process)


def _fake_model(turns: int) -> None:
    sys.path.insert(0, str(REPO))
    from tests.fakes import openai_server
    from tests.fakes.openai_server import Call, FakeOpenAIServer, Reply

    # socketserver's default listen backlog is 5: a burst of new connections beyond it
    # waits out a SYN retransmit (1 s). Raised here, in this process only.
    openai_server._Server.request_queue_size = 256

    lock = threading.Lock()
    stats: dict[str, Any] = {"requests": 0, "foreign": [], "no_marker": 0,
                             "echo_missing": [], "beyond_turns": 0}  # fmt: skip
    bash_turn = _bash_turn(turns)

    def responder(body: dict[str, Any]) -> Reply:
        messages = body.get("messages") or []
        whole = json.dumps(messages)
        found = set(MARKER.findall(whole))
        task = next((m for m in messages if m.get("role") == "user"
                     and MARKER.search(str(m.get("content")))), None)  # fmt: skip
        assistants = sum(1 for m in messages if m.get("role") == "assistant")
        turn = assistants + 1
        with lock:
            stats["requests"] += 1
            if task is None:
                stats["no_marker"] += 1
                return Reply("no marker in the task")
            own = MARKER.search(str(task["content"])).group(1)
            if found - {own}:
                stats["foreign"].append([own, sorted(found - {own})])
            if turn > turns:
                stats["beyond_turns"] += 1
        marker = f"LOAD{own}"
        if bash_turn and turn == bash_turn + 1:
            results = " ".join(str(m.get("content")) for m in messages if m.get("role") == "tool")
            if f"ok-{marker}" not in results:
                with lock:
                    stats["echo_missing"].append(marker)
        label = "done" if turn >= turns else f"t{turn:02d}"
        text = f"{marker} {label} sent={time.time():.6f}"
        if turn >= turns:
            return Reply(text, text_chunk=10_000)
        if turn == bash_turn:
            call = Call("bash", {"command": f"printf '%s-%s\\n' ok {marker}"})
        else:
            call = Call("read", {"path": f"{marker}-f{turn % FILES}.txt",
                                 "offset": turn, "limit": 3})  # fmt: skip
        return Reply(text, calls=[Call(call.name, call.arguments, id=f"call_{marker}_{turn}")],
                     text_chunk=10_000)  # fmt: skip

    server = FakeOpenAIServer()
    server.responder = responder
    server.start()
    print(server.base_url, flush=True)
    sys.stdin.read()  # until the bench closes our stdin
    server.stop()
    with lock:
        print(json.dumps(stats), flush=True)


# the server


@dataclass
class Serve:
    home: Path
    process: subprocess.Popen[str]
    url: str
    token: str
    stderr_path: Path


def _start_serve(root: Path) -> Serve:
    home = root / "home"
    home.mkdir()
    env = {k: v for k, v in os.environ.items() if not k.startswith(("LATHE_", "OPENAI_"))}
    env.update({"LATHE_HOME": str(home), "OPENAI_API_KEY": "sk-bench"})
    stderr_path = root / "serve.stderr"
    process = subprocess.Popen(
        [sys.executable, "-m", "lathe", "serve", "--port", "0"],
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=stderr_path.open("w"),  # a file: a pipe nobody reads could fill and block it
        text=True,
        cwd=root,
    )
    assert process.stdout is not None
    line = process.stdout.readline().strip()
    if not line.startswith("http://"):
        process.kill()
        raise SystemExit(f"lathe serve did not start: {stderr_path.read_text()}")
    token = (home / "serve" / "token").read_text().strip()
    return Serve(home, process, line, token, stderr_path)


def _stop_serve(serve: Serve) -> None:
    if serve.process.poll() is None:
        serve.process.terminate()
        try:
            serve.process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            serve.process.kill()
            serve.process.wait()


class Sampler:
    """The server's RSS and its number of descendants (commands, git, the sandbox)
    every 0.2 s, for the peaks. The descendants' RSS is not summed: a child caught
    between fork and exec shows the server's own pages as its RSS."""

    def __init__(self, pid: int) -> None:
        import psutil

        self.process = psutil.Process(pid)
        self.peak = 0
        self.peak_children = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def rss(self) -> int:
        return self.process.memory_info().rss

    def descendants(self) -> int:
        return len(self.process.children(recursive=True))

    def cpu(self) -> float:
        times = self.process.cpu_times()
        return times.user + times.system

    def _run(self) -> None:
        while not self._stop.wait(0.2):
            try:
                self.peak = max(self.peak, self.rss())
                children = self.descendants()
            except Exception:
                return
            self.peak_children = max(self.peak_children, children)

    def start(self) -> None:
        self.peak = self.rss()
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        self._thread.join()


# the clients


@dataclass
class Stream:
    index: int
    marker: str
    session_id: str = ""
    events: list[tuple[int, str, float]] = field(default_factory=list)  # id, data, arrival
    reconnects: int = 0
    finished_at: float = 0.0
    posted_at: float = 0.0
    error: str = ""
    connected: asyncio.Event = field(default_factory=asyncio.Event)


async def _follow(http: Any, stream: Stream, timeout: float) -> None:
    """Read the session's SSE stream until run_finished; resume with Last-Event-ID if
    the server ends or drops it (counted: the journal then supplies what was missed)."""
    import httpx

    last = 0
    while True:
        headers = {"Last-Event-ID": str(last)} if last else {}
        try:
            async with http.stream(
                "GET", f"/v1/sessions/{stream.session_id}/events", headers=headers,
                timeout=httpx.Timeout(30.0, read=timeout),
            ) as response:  # fmt: skip
                if response.status_code != 200:
                    stream.error = f"events: HTTP {response.status_code}"
                    stream.connected.set()
                    return
                stream.connected.set()
                number: int | None = None
                data: list[str] = []
                async for line in response.aiter_lines():
                    if line.startswith("id:"):
                        number = int(line[3:].strip())
                    elif line.startswith("data:"):
                        data.append(line[5:].removeprefix(" "))
                    elif not line and data:
                        arrival = time.time()
                        text = "\n".join(data)
                        if number is not None:
                            stream.events.append((number, text, arrival))
                            last = number
                            if text.startswith('{"type":"run_finished"'):
                                stream.finished_at = arrival
                                return
                        number, data = None, []
        except httpx.TransportError as exc:
            stream.error = f"{type(exc).__name__}: {exc}"
        stream.reconnects += 1
        if stream.reconnects > 20:
            stream.error = stream.error or "the stream kept ending before run_finished"
            return


def _workspace(root: Path, marker: str) -> Path:
    ws = root / f"ws-{marker}"
    ws.mkdir()
    for k in range(FILES):
        lines = [f"{marker} file {k} line {n}" for n in range(1, LINES + 1)]
        (ws / f"{marker}-f{k}.txt").write_text("\n".join(lines) + "\n")
    return ws


async def _load(options: argparse.Namespace, serve: Serve, model_url: str, root: Path,
                figures: dict[str, Any]) -> list[Stream]:  # fmt: skip
    import httpx

    sampler = Sampler(serve.process.pid)
    limits = httpx.Limits(max_connections=None, max_keepalive_connections=None)
    headers = {"Authorization": f"Bearer {serve.token}"}
    async with httpx.AsyncClient(base_url=serve.url, headers=headers, limits=limits,
                                 timeout=120.0) as http:  # fmt: skip
        (await http.get("/v1/health")).raise_for_status()
        figures["rss_start"] = sampler.rss()
        streams = [Stream(i, _marker(i)) for i in range(options.sessions)]
        created = time.perf_counter()
        for stream in streams:
            ws = _workspace(root, stream.marker)
            answer = await http.post("/v1/sessions", json={
                "workspace": str(ws), "model": "fake-model", "base_url": model_url,
                "max_turns": options.turns + 10, "approval_timeout_s": 30,
            })  # fmt: skip
            if answer.status_code != 201:
                raise SystemExit(f"creating a session failed: {answer.status_code} {answer.text}")
            stream.session_id = answer.json()["id"]
            if stream.index == 0:
                figures["rss_first"] = sampler.rss()
        figures["create_s"] = time.perf_counter() - created
        await asyncio.sleep(1.0)  # let the last creations' garbage settle
        figures["rss_idle"] = sampler.rss()
        figures["children_idle"] = sampler.descendants()
        figures["metrics_idle"] = (await http.get("/v1/metrics")).json()
        cpu_before = sampler.cpu()

        followers = [asyncio.create_task(_follow(http, s, options.timeout)) for s in streams]
        await asyncio.wait_for(asyncio.gather(*(s.connected.wait() for s in streams)), 120)
        sampler.start()
        figures["load_before"] = os.getloadavg()
        started = time.time()

        async def post(stream: Stream) -> None:
            stream.posted_at = time.time()
            answer = await http.post(
                f"/v1/sessions/{stream.session_id}/messages",
                json={"text": f"task {stream.marker}: read the files, run the command, "
                              "then say done"},
            )  # fmt: skip
            if answer.status_code != 202:
                stream.error = f"posting failed: {answer.status_code} {answer.text}"

        await asyncio.gather(*(post(s) for s in streams))
        progress = asyncio.create_task(_progress(streams, started))
        _, pending = await asyncio.wait(followers, timeout=options.timeout)
        progress.cancel()
        for task in pending:
            task.cancel()
        figures["wall_s"] = max((s.finished_at for s in streams), default=started) - started
        figures["load_after"] = os.getloadavg()
        figures["cpu_run_s"] = sampler.cpu() - cpu_before
        sampler.stop()
        figures["rss_peak"] = sampler.peak
        figures["children_peak"] = sampler.peak_children
        await asyncio.sleep(1.0)
        figures["rss_after"] = sampler.rss()
        figures["cpu_total_s"] = sampler.cpu()
        summaries = await asyncio.gather(*(http.get(f"/v1/sessions/{s.session_id}")
                                           for s in streams))  # fmt: skip
        figures["summaries"] = [a.json() for a in summaries]
    return streams


async def _progress(streams: list[Stream], started: float) -> None:
    while True:
        await asyncio.sleep(15)
        finished = sum(1 for s in streams if s.finished_at)
        events = sum(len(s.events) for s in streams)
        print(f"   ... {time.time() - started:.0f} s: {finished}/{len(streams)} runs finished, "
              f"{events} events", file=sys.stderr, flush=True)  # fmt: skip


# checking and figures


def _check(streams: list[Stream], summaries: list[dict[str, Any]], turns: int,
           fake: dict[str, Any]) -> tuple[list[str], dict[str, Any]]:  # fmt: skip
    problems: list[str] = []
    text_lat: list[float] = []
    reply_lat: list[float] = []
    types: dict[str, int] = {}
    for stream, summary in zip(streams, summaries, strict=True):
        where = f"session {stream.index} ({stream.session_id})"
        if stream.error:
            problems.append(f"{where}: {stream.error}")
        ids = [number for number, _, _ in stream.events]
        if ids != list(range(1, len(ids) + 1)):
            repeated = len(ids) - len(set(ids))
            missing = sorted(set(range(1, max(ids, default=0) + 1)) - set(ids))
            problems.append(f"{where}: ids not 1..n: {repeated} repeated, missing {missing[:10]}")
        if summary.get("last_event_id") != len(ids):
            problems.append(f"{where}: received {len(ids)} events, the journal has "
                            f"{summary.get('last_event_id')}")  # fmt: skip
        own = stream.marker[4:]
        seen_turns: list[str] = []
        replies = 0
        finished: dict[str, Any] | None = None
        for number, text, arrival in stream.events:
            foreign = set(MARKER.findall(text)) - {own}
            if foreign:
                names = [f"LOAD{x}" for x in sorted(foreign)]
                problems.append(f"{where}: event {number} carries {names}")
            event = json.loads(text)
            kind = event.get("type", "")
            if kind == "queued":
                kind = f"queued {event.get('what')}"
            types[kind] = types.get(kind, 0) + 1
            if kind == "run_started" and event.get("session_id") != stream.session_id:
                problems.append(f"{where}: run_started names session {event.get('session_id')}")
            if kind == "text_delta":
                for _, label, sent in SENT.findall(event["text"]):
                    text_lat.append(arrival - float(sent))
                    seen_turns.append(label)
            elif kind == "assistant_reply":
                replies += 1
                for _, _, sent in SENT.findall(event["message"].get("text", "")):
                    reply_lat.append(arrival - float(sent))
            elif kind == "run_finished":
                finished = event
        if finished is None:
            problems.append(f"{where}: no run_finished received")
        elif (finished["status"], finished["turns"]) != ("unverified", turns):
            problems.append(f"{where}: run ended {finished['status']} after {finished['turns']} "
                            f"turns ({finished.get('reason', '')})")  # fmt: skip
        expected = [f"t{t:02d}" for t in range(1, turns)] + ["done"]
        if seen_turns != expected:
            problems.append(f"{where}: reply texts {seen_turns[:5]}... not the {turns} expected")
        if replies != turns:
            problems.append(f"{where}: {replies} assistant replies, expected {turns}")
    if fake.get("foreign"):
        problems.append(f"model requests carrying another session's marker: {fake['foreign'][:5]}")
    if fake.get("no_marker"):
        problems.append(f"{fake['no_marker']} model requests without a task marker")
    if fake.get("echo_missing"):
        problems.append(f"the command's output missing from the next request: "
                        f"{fake['echo_missing'][:5]}")  # fmt: skip
    if fake.get("beyond_turns"):
        problems.append(f"{fake['beyond_turns']} model requests beyond turn {turns}")
    expected_requests = len(streams) * turns
    if fake.get("requests") != expected_requests:
        problems.append(f"the fake model answered {fake.get('requests')} requests, "
                        f"expected {expected_requests}")  # fmt: skip
    return problems, {"text": text_lat, "reply": reply_lat, "types": types}


def _quantiles(values: list[float]) -> str:
    if not values:
        return "(none)"
    ordered = sorted(values)

    def at(q: float) -> float:
        return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))] * 1000

    return (f"p50 {at(0.5):.1f}  p90 {at(0.9):.1f}  p99 {at(0.99):.1f}  "
            f"max {ordered[-1] * 1000:.1f} ms  (n={len(ordered)})")  # fmt: skip


def _mb(value: float) -> str:
    return f"{value / 2**20:.1f} MB"


def _report(options: argparse.Namespace, figures: dict[str, Any], streams: list[Stream],
            measured: dict[str, Any], problems: list[str]) -> None:  # fmt: skip
    n, turns = options.sessions, options.turns
    events = sum(len(s.events) for s in streams)
    wall = figures["wall_s"] or float("nan")
    one, five, _ = figures["load_before"]
    print(f"machine: {os.cpu_count()} CPUs, load average {one:.2f} (1 min), {five:.2f} (5 min) "
          "before the runs")  # fmt: skip
    print(f"sessions: {n}  turns each: {turns}  (one command each, at turn {_bash_turn(turns)})"
          f"  data under {figures['root']}")  # fmt: skip
    metrics = figures["metrics_idle"]
    print(f"server limits: max_model_calls {options.model_calls_limit} per endpoint, "
          f"max_commands {metrics.get('max_commands')}")  # fmt: skip
    print(f"session creation: {figures['create_s']:.1f} s for {n} "
          f"({figures['create_s'] * 1000 / n:.0f} ms each, one at a time)")  # fmt: skip
    print(f"events: {events}  ({events / n:.0f} per session)  "
          f"by type: {json.dumps(dict(sorted(measured['types'].items())))}")  # fmt: skip
    print(f"wall time (first post -> last run_finished): {wall:.1f} s")
    print(f"throughput: {n * turns / wall:.1f} turns/s, {events / wall:.0f} events/s "
          f"delivered, {n / wall:.2f} tasks/s")  # fmt: skip
    runs = [s.finished_at - s.posted_at for s in streams if s.finished_at]
    if runs:
        print(f"one session's run: median {statistics.median(runs):.1f} s, "
              f"max {max(runs):.1f} s")  # fmt: skip
    print(f"latency, model reply sent -> its text_delta at the SSE client:       "
          f"{_quantiles(measured['text'])}")  # fmt: skip
    print(f"latency, model reply sent -> its assistant_reply at the SSE client: "
          f"{_quantiles(measured['reply'])}")  # fmt: skip
    per_idle = (figures["rss_idle"] - figures["rss_first"]) / max(n - 1, 1)
    print(
        f"server RSS: start {_mb(figures['rss_start'])}, after the first session "
        f"{_mb(figures['rss_first'])}, {n} idle {_mb(figures['rss_idle'])}, "
        f"peak {_mb(figures['rss_peak'])}, after the runs {_mb(figures['rss_after'])}"
    )
    print(f"RSS per idle session: {per_idle / 1024:.0f} KB "
          f"((all idle - first) / {max(n - 1, 1)}); the first session, imports included: "
          f"{_mb(figures['rss_first'] - figures['rss_start'])}")  # fmt: skip
    grown = (figures["rss_after"] - figures["rss_idle"]) / n
    print(f"RSS a session keeps after its run: {grown / 1024:.0f} KB ((after the runs - all idle) "
          f"/ {n})")  # fmt: skip
    print(
        f"server's descendants: {figures['children_idle']} idle, "
        f"{figures['children_peak']} at the peak"
    )
    print(f"server CPU: {figures['cpu_run_s']:.1f} s during the runs "
          f"({figures['cpu_run_s'] * 1000 / (n * turns):.1f} ms per turn), "
          f"{figures['cpu_total_s']:.1f} s in all")  # fmt: skip
    reconnects = sum(s.reconnects for s in streams)
    print(f"streams resumed with Last-Event-ID: {reconnects}")
    one, five, _ = figures["load_after"]
    print(f"load average after: {one:.2f} (1 min), {five:.2f} (5 min)")
    if problems:
        print(f"CHECKS FAILED ({len(problems)}):")
        for problem in problems[:40]:
            print(f"  {problem}")
    else:
        print(
            "checks: every event delivered once, in order, to its own session; "
            "every run finished as scripted"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sessions", type=int, default=100)
    parser.add_argument("--turns", type=int, default=20)
    parser.add_argument("--quick", action="store_true", help="a smoke check: 5 sessions x 5 turns")
    parser.add_argument("--timeout", type=float, default=1800.0, help="seconds for all runs")
    parser.add_argument("--keep", action="store_true", help="keep the temporary directory")
    parser.add_argument("--dir", default=None,
                        help="where the temporary directory (LATHE_HOME, workspaces) goes, "
                             "e.g. /dev/shm to take the disk's fsync out")  # fmt: skip
    parser.add_argument("--fake-model", action="store_true", help=argparse.SUPPRESS)
    options = parser.parse_args()
    if options.quick:
        options.sessions, options.turns = 5, 5
    if options.fake_model:
        _fake_model(options.turns)
        return
    from lathe.config.schema import ServeConfig

    options.model_calls_limit = ServeConfig().max_model_calls
    root = Path(tempfile.mkdtemp(prefix="lathe-serve-load-", dir=options.dir))
    fake = subprocess.Popen(
        [sys.executable, __file__, "--fake-model", "--turns", str(options.turns)],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
    )  # fmt: skip
    assert fake.stdout is not None and fake.stdin is not None
    model_url = fake.stdout.readline().strip()
    serve = _start_serve(root)
    figures: dict[str, Any] = {"root": root.parent}
    try:
        streams = asyncio.run(_load(options, serve, model_url, root, figures))
    finally:
        _stop_serve(serve)
        fake.stdin.close()
        fake_stats = json.loads(fake.stdout.readline() or "{}")
        fake.wait(timeout=30)
    problems, measured = _check(streams, figures["summaries"], options.turns, fake_stats)
    if serve.process.returncode not in (0, -15):
        problems.append(f"lathe serve exited {serve.process.returncode}")
    _report(options, figures, streams, measured, problems)
    stderr = serve.stderr_path.read_text().strip().splitlines()
    noise = [line for line in stderr if not line.startswith("lathe: serving on")
             and "new token" not in line]  # fmt: skip
    if noise:
        print(f"lathe serve stderr ({len(noise)} lines), first: {noise[:5]}")
    if options.keep:
        print(f"kept {root}")
    else:
        shutil.rmtree(root, ignore_errors=True)
    sys.exit(1 if problems else 0)


if __name__ == "__main__":
    main()
