"""SIGTERM taken as Ctrl-C by the faces that run work to an end (`lathe run`, `lathe
batch`): a cancelled CI job or a `kill` then stops the work the way Ctrl-C does, with
what was running ended and recorded, instead of the process dying where it stands."""

from __future__ import annotations

import contextlib
import signal
import threading
from collections.abc import Iterator


@contextlib.contextmanager
def sigterm_as_ctrl_c(came: list[int]) -> Iterator[None]:
    """Inside the block, SIGTERM raises SIGINT, so SIGINT's handler runs (asyncio's
    cancels the run; Python's default raises KeyboardInterrupt); `came` gets SIGTERM's
    number once one came. Where SIGINT is ignored (a job started with nohup or `&`),
    SIGTERM keeps its default: raising an ignored signal would make it ignored too. Off
    the main thread (a library caller's), where handlers cannot be set, nothing changes."""
    ignored = signal.getsignal(signal.SIGINT) is signal.SIG_IGN
    if ignored or threading.current_thread() is not threading.main_thread():
        yield
        return

    def as_ctrl_c(number: int, frame: object) -> None:
        came.append(number)
        signal.raise_signal(signal.SIGINT)

    before = signal.signal(signal.SIGTERM, as_ctrl_c)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, before)
