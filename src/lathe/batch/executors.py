"""Where a batch's tasks run. The seam: `TaskExecutor.run(next_task, settings, sink)`
pulls tasks from `next_task()` (None: nothing more to start — the list is done or a
budget is spent) and hands each finished `TaskResult` to `sink.finished`, with
`sink.started(task)` as each begins; it returns when every task it started has ended,
or at once after `stop()` (the tasks still running are killed and not reported).
`LocalPool` runs N at a time in this process's threads; `RayExecutor`
(`ray_executor.py`) on a Ray cluster.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Protocol

from lathe.batch.processes import allow_tasks, stop_all
from lathe.batch.task_run import RunSettings, TaskResult, run_task
from lathe.batch.tasks import BatchTask

_CLEANUP_WAIT_S = 30.0


class ResultSink(Protocol):
    def started(self, task: BatchTask) -> None: ...

    def finished(self, result: TaskResult) -> None: ...


class TaskExecutor(Protocol):
    def run(
        self,
        next_task: Callable[[], BatchTask | None],
        settings: RunSettings,
        sink: ResultSink,
    ) -> None: ...

    def stop(self) -> None: ...


class LocalPool:
    """`workers` tasks at a time, each a `lathe run` process of its own."""

    def __init__(self, workers: int) -> None:
        self.workers = workers
        self._stopping = threading.Event()
        self._lock = threading.Lock()
        self._threads: list[threading.Thread] = []
        self._running = 0  # worker threads not yet ended

    def run(
        self,
        next_task: Callable[[], BatchTask | None],
        settings: RunSettings,
        sink: ResultSink,
    ) -> None:
        def work() -> None:
            try:
                pull_and_run()
            finally:
                with self._lock:
                    self._running -= 1
                    if not self._running:
                        all_ended.set()

        def pull_and_run() -> None:
            while not self._stopping.is_set():
                with self._lock:
                    task = next_task()
                    if task is None:
                        return
                    sink.started(task)
                try:
                    result = run_task(task, settings)
                except Exception as exc:  # a bug of lathe's must not lose the task's line
                    result = TaskResult(id=task.id, kind=task.kind, error_kind="infrastructure",
                                        reason=f"lathe failed on the task: {exc!r}")  # fmt: skip
                with self._lock:
                    if self._stopping.is_set():
                        return  # killed midway: it runs again next time
                    sink.finished(result)

        allow_tasks()  # this pool's own run, whatever an earlier one stopped
        all_ended = threading.Event()
        threads = [threading.Thread(target=work, daemon=True) for _ in range(self.workers)]
        self._threads, self._running = threads, len(threads)
        for thread in threads:
            thread.start()
        if not threads:
            return
        # Short waits, so Ctrl-C reaches the main thread; on an event, not `join`: Python
        # 3.11 marks a thread ended when Ctrl-C interrupts a join of it, and `stop` would
        # then not wait for it to remove its copy.
        while not all_ended.wait(0.2):
            pass

    def stop(self) -> None:
        with self._lock:
            self._stopping.set()
        stop_all()
        # Their tasks end at once now; waited for so that each removes its copy before
        # the process exits and stops these daemon threads wherever they are.
        deadline = time.monotonic() + _CLEANUP_WAIT_S  # one wait for them all
        for thread in self._threads:
            thread.join(max(deadline - time.monotonic(), 0))
