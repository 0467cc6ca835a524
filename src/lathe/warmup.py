"""Slow one-time setup done ahead of need, on one background thread.

An SDK import and its HTTP client, the shell parser of the command guard: each costs
tens to hundreds of milliseconds of Python the first time it is used. Queued with
`ahead`, that work runs on one daemon thread while the main thread waits on something
else (the baseline check, a model reply, the user typing), and the first real use finds
it done.

While a job runs Python it holds the GIL, so it slows whatever the main thread computes
meanwhile (start-up lost 30 ms to that). So queued jobs wait until the face calls
`start()`, where its main thread is about to wait: `lathe run` once the run has started,
the interactive app once its prompt is up. A process that never calls it (a library
user, `lathe doctor`) loses nothing: the first real use does the work itself.

Jobs run one at a time, in the order they were queued: queue what is needed first,
first. A job that raises is dropped; the real use does the same work again and reports
the error where it can be mapped. Queue only work the run will surely need.

At exit the job in progress is waited for and no other starts: the interpreter stops
a daemon thread wherever it is, and one stopped inside an extension's native code
(pydantic-core building a schema, mid-import) aborts the whole process.
"""

from __future__ import annotations

import atexit
import functools
import importlib
import queue
import threading
from collections.abc import Callable

_jobs: queue.SimpleQueue[Callable[[], object]] | None = None
_creating = threading.Lock()
_go = threading.Event()
_running = threading.Lock()  # held while a job runs
_closed = False
_EXIT_WAIT_S = 5.0


def start() -> None:
    """Let the queued jobs run, and those queued from now on as they come."""
    _go.set()


def ahead(job: Callable[[], object]) -> None:
    """Run `job` on the warm-up thread after the jobs queued before it."""
    global _jobs
    with _creating:
        if _jobs is None:
            _jobs = queue.SimpleQueue()
            threading.Thread(
                target=_work, args=(_jobs,), name="lathe warm-up", daemon=True
            ).start()
            atexit.register(_close)
    _jobs.put(job)


def import_ahead(*modules: str) -> None:
    """Import `modules` on the warm-up thread, in order."""
    for name in modules:
        ahead(functools.partial(importlib.import_module, name))


def _work(jobs: queue.SimpleQueue[Callable[[], object]]) -> None:
    _go.wait()
    while True:
        job = jobs.get()
        with _running:
            if _closed:
                return
            try:
                job()
            except Exception:  # the real use repeats it and reports the error
                continue


def _close() -> None:
    global _closed
    _closed = True
    if _running.acquire(timeout=_EXIT_WAIT_S):
        _running.release()
