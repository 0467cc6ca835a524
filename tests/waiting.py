"""Waiting on a `lathe` process the test started for something to happen."""

from __future__ import annotations

import subprocess
import time
from collections.abc import Callable


def while_running(
    process: subprocess.Popen, happened: Callable[[], object], what: str, timeout: float = 60
) -> None:
    """Poll until `happened()` is true; fail, saying `what` never happened, when the
    process exits first or `timeout` seconds pass."""
    deadline = time.monotonic() + timeout
    while not happened():
        assert time.monotonic() < deadline and process.poll() is None, what
        time.sleep(0.1)
