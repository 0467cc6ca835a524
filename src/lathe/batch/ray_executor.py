"""A batch's tasks as Ray tasks (`lathe batch --executor ray`), the `TaskExecutor` seam
over a Ray cluster: `run_task` runs on a worker exactly as the local pool runs it, and
this process — the driver — keeps everything else (what runs, the budgets, writing
`results.jsonl`), so resume behaves as with the local pool.

- Where: an existing cluster at `address` (`--ray-address`, else `RAY_ADDRESS`), or a
  local Ray instance this executor starts — only once a task is to run, so a resumed
  batch with nothing left starts no Ray — sized for `workers` tasks of `task_cpus`
  CPUs, and shuts down at the end. A cluster's nodes need lathe (the same version)
  installed; they get the driver's LATHE_*, OTEL_* and *_API_KEY variables through the
  job's `runtime_env` (a local instance's workers inherit the driver's environment).
- What travels: a task whose repository is a folder here goes to the worker as a tar
  archive in Ray's object store (`pack`), unless `ship_sources` is False, for a cluster
  that sees the task folders at the same path; a git URL is cloned by the worker. The
  `TaskResult` — diff and transcript included — comes back the same way.
- At most `workers` tasks are submitted at a time, each reserving `task_cpus`.
- A worker that dies is retried once by Ray (`max_retries=1`); dying again, or any
  other failure of Ray rather than of the task, is an `error` result of kind
  "infrastructure", reported like any other (`--retry-errors` runs it again).
- `stop()` force-cancels the tasks in flight (their `lathe run` dies with its worker);
  they are not reported, so they run again next time, as with the local pool.
"""

from __future__ import annotations

import contextlib
import importlib.util
import logging
import math
import os
import socket
import threading
import time
from collections.abc import Callable, Mapping
from datetime import UTC, datetime
from typing import Any

from lathe.batch.executors import ResultSink
from lathe.batch.task_run import RunSettings, TaskResult, pack, run_task
from lathe.batch.tasks import BatchTask
from lathe.errors import UsageError

_FORWARDED_PREFIXES = ("LATHE_", "OTEL_")
_FORWARDED_SUFFIXES = ("_API_KEY",)
_POLL_S = 0.5  # ray.wait's slice: Ctrl-C and stop() are noticed between slices


class RayExecutor:
    """Up to `workers` tasks at a time as Ray tasks of `task_cpus` CPUs each."""

    def __init__(
        self,
        workers: int,
        *,
        address: str | None = None,
        task_cpus: float = 1.0,
        ship_sources: bool = True,
    ) -> None:
        if importlib.util.find_spec("ray") is None:
            raise UsageError("Ray is not installed: pip install 'lathe[ray]'")
        self.workers = workers
        self.address = address or os.environ.get("RAY_ADDRESS") or None
        self.task_cpus = task_cpus
        self.ship_sources = ship_sources
        self._stopping = threading.Event()
        self._lock = threading.Lock()
        self._running: dict[Any, tuple[BatchTask, float, str]] = {}  # ref -> task, its start

    def run(
        self,
        next_task: Callable[[], BatchTask | None],
        settings: RunSettings,
        sink: ResultSink,
    ) -> None:
        ray: Any = None
        remote: Any = None
        settings_ref: Any = None
        initialized = False
        pulling = True
        try:
            while not self._stopping.is_set():
                while pulling and len(self._running) < self.workers:
                    task = next_task()
                    if task is None:
                        pulling = False
                        break
                    if ray is None:
                        ray, initialized = self._connect()
                        remote = ray.remote(num_cpus=self.task_cpus, max_retries=1)(run_task)
                        settings_ref = ray.put(settings)
                    sink.started(task)
                    failed = self._submit(ray, remote, task, settings_ref, settings.run_folder)
                    if failed is not None:
                        sink.finished(failed)
                if not self._running:
                    return
                done, _ = ray.wait(list(self._running), num_returns=1, timeout=_POLL_S)
                for ref in done:
                    with self._lock:
                        if self._stopping.is_set():
                            return
                        task, began, started = self._running.pop(ref)
                    result = _outcome(ray, ref, task, began, started)
                    if result is not None:
                        sink.finished(result)
        finally:
            self._cancel_running(ray)
            if initialized:
                ray.shutdown()

    def stop(self) -> None:
        with self._lock:
            self._stopping.set()
        if self._running:
            import ray

            self._cancel_running(ray)

    def _connect(self) -> tuple[Any, bool]:
        """Ray, connected; True when this executor did the connecting (and so
        disconnects, or shuts its local instance down, at the end)."""
        import ray

        if ray.is_initialized():  # a Python caller's own Ray session: used as it is
            return ray, False
        if self.address:
            _answers(self.address)
        keep = _stop_handlers()
        try:
            if self.address:
                ray.init(
                    address=self.address,
                    runtime_env={"env_vars": _forwarded(os.environ)},
                    log_to_driver=False,
                    logging_level=logging.WARNING,
                )
            else:
                ray.init(
                    address="local",  # never a cluster found by chance: that is --ray-address
                    num_cpus=max(1, math.ceil(self.workers * self.task_cpus)),
                    include_dashboard=False,
                    log_to_driver=False,
                    logging_level=logging.ERROR,
                )
        except (ConnectionError, ValueError, RuntimeError) as exc:
            what = f"reach the Ray cluster at {self.address}" if self.address else "start Ray"
            raise UsageError(f"cannot {what}: {exc}") from None
        finally:
            keep()
        return ray, True

    def _submit(
        self, ray: Any, remote: Any, task: BatchTask, settings_ref: Any, leave_out: str | None
    ) -> TaskResult | None:
        """Send `task` to Ray, its repository without the folder `leave_out` (the run
        folder); a result only when it could not be sent."""
        began, started = time.monotonic(), _now()
        try:
            source = None
            if self.ship_sources and not task.is_git:
                source = ray.put(pack(task.repo, leave_out))
        except (OSError, ray.exceptions.RayError) as exc:
            return _infrastructure(task, f"shipping the repository to Ray: {exc}", began, started)
        ref = remote.options(name=f"lathe-task-{task.id}").remote(task, settings_ref, source)
        with self._lock:
            self._running[ref] = (task, began, started)
        return None

    def _cancel_running(self, ray: Any) -> None:
        with self._lock:
            refs = list(self._running)
            self._running.clear()
        for ref in refs:
            with contextlib.suppress(Exception):  # finished already, or Ray gone
                ray.cancel(ref, force=True)


def _outcome(ray: Any, ref: Any, task: BatchTask, began: float, started: str) -> TaskResult | None:
    """The finished task's result; None for one cancelled (it runs again next time)."""
    errors = ray.exceptions
    try:
        result: TaskResult = ray.get(ref)
        return result
    except errors.TaskCancelledError:
        return None
    except errors.RayTaskError as exc:  # run_task itself raised: not the agent's doing
        cause = exc.cause if exc.cause is not None else exc
        reason = f"lathe failed on its Ray worker: {type(cause).__name__}: {cause}"
    except errors.RayError as exc:  # the worker (or its node) died, after Ray's one retry
        reason = f"the Ray worker died: {exc}"
    return _infrastructure(task, reason, began, started)


def _infrastructure(task: BatchTask, reason: str, began: float, started: str) -> TaskResult:
    return TaskResult(
        id=task.id,
        status="error",
        error_kind="infrastructure",
        reason=reason,
        kind=task.kind,
        tags=list(task.tags),
        started=started,
        finished=_now(),
        wall_s=round(time.monotonic() - began, 3),
    )


def _answers(address: str) -> None:
    """Ray takes minutes to give up on an address where nothing listens: ask first."""
    host, colon, port = address.split("://", 1)[-1].rpartition(":")
    if not colon or not port.isdigit():
        return  # "auto" and the like: Ray's to resolve
    try:
        socket.create_connection((host.strip("[]"), int(port)), timeout=10).close()
    except OSError as exc:
        raise UsageError(f"cannot reach the Ray cluster at {address}: {exc}") from None


def _forwarded(environ: Mapping[str, str]) -> dict[str, str]:
    """The driver's variables a cluster's workers need to run lathe as it would here."""
    return {
        name: value
        for name, value in environ.items()
        if name.startswith(_FORWARDED_PREFIXES) or name.endswith(_FORWARDED_SUFFIXES)
    }


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")


def _stop_handlers():
    """A function that puts back the SIGTERM and SIGINT handlers in place now: Ray's
    start installs its own, which dumped a stack and exited 1 where lathe ends the
    running tasks and exits 143 (off the main thread, nothing to keep)."""
    import signal
    import threading

    if threading.current_thread() is not threading.main_thread():
        return lambda: None
    saved = {n: signal.getsignal(n) for n in (signal.SIGTERM, signal.SIGINT)}

    def put_back() -> None:
        for number, handler in saved.items():
            if handler is not None:
                signal.signal(number, handler)

    return put_back
