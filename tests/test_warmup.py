"""The warm-up thread runs queued jobs only once started, in order, past failures."""

from __future__ import annotations

import subprocess
import sys

_PROBE = """
import threading, time
from lathe import warmup

ran, done = [], threading.Event()

def job(name, fail=False):
    def run():
        ran.append(name)
        if fail:
            raise RuntimeError("boom")
    return run

warmup.ahead(job("first"))
warmup.ahead(job("broken", fail=True))
time.sleep(0.3)
print("before start:", ran)
warmup.start()
warmup.ahead(job("queued after start"))
warmup.ahead(done.set)
assert done.wait(10), "the queue never drained"
print("after start:", ran)
"""


def test_jobs_wait_for_start_then_run_in_order_past_a_failure():
    probe = [sys.executable, "-c", _PROBE]
    done = subprocess.run(probe, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == [
        "before start: []",
        "after start: ['first', 'broken', 'queued after start']",
    ]


def test_import_ahead_imports_the_modules():
    code = (
        "import sys, time\nfrom lathe import warmup\n"
        "assert 'tomllib' not in sys.modules\n"
        "warmup.import_ahead('tomllib')\nwarmup.start()\n"
        "deadline = time.monotonic() + 10\n"
        "while 'tomllib' not in sys.modules and time.monotonic() < deadline:\n"
        "    time.sleep(0.01)\n"
        "print('tomllib' in sys.modules)\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "True"


def test_exit_waits_for_the_job_in_progress_and_starts_no_other(tmp_path):
    # A daemon thread stopped inside native code at exit aborts the process (SIGABRT),
    # so exit lets the job that runs finish.
    marks = tmp_path / "marks"
    code = (
        "import threading, time\nfrom lathe import warmup\n"
        "began = threading.Event()\n"
        "def slow():\n    began.set(); time.sleep(0.5)\n"
        f"    open({str(marks)!r}, 'a').write('slow ')\n"
        f"def later():\n    open({str(marks)!r}, 'a').write('later ')\n"
        "warmup.ahead(slow)\nwarmup.ahead(later)\nwarmup.start()\nbegan.wait(10)\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert marks.read_text() == "slow "
