"""SIGTERM and SIGHUP taken as Ctrl-C by the faces that run work to an end (`lathe
run`, `lathe batch`): a cancelled CI job, a `kill` or a closed terminal then stops the
work the way Ctrl-C does, with what was running ended and recorded (the turn's
checkpoint included), instead of the process dying where it stands."""

from __future__ import annotations

import contextlib
import signal
import threading
from collections.abc import Iterator

_STOPPING = (signal.SIGTERM, signal.SIGHUP)


@contextlib.contextmanager
def sigterm_as_ctrl_c(came: list[int]) -> Iterator[None]:
    """Inside the block, SIGTERM and SIGHUP raise SIGINT, so SIGINT's handler runs
    (asyncio's cancels the run; Python's default raises KeyboardInterrupt); `came` gets
    the number of the first one that came. Where SIGINT is ignored (a job started with
    `&`), they keep their defaults: raising an ignored signal would make it ignored
    too. An ignored SIGHUP (nohup) stays ignored. Off the main thread (a library
    caller's), where handlers cannot be set, nothing changes."""
    ignored = signal.getsignal(signal.SIGINT) is signal.SIG_IGN
    if ignored or threading.current_thread() is not threading.main_thread():
        yield
        return

    def as_ctrl_c(number: int, frame: object) -> None:
        if not came:
            came.append(number)
        signal.raise_signal(signal.SIGINT)

    handled = [s for s in _STOPPING if signal.getsignal(s) is not signal.SIG_IGN]
    before = {s: signal.signal(s, as_ctrl_c) for s in handled}
    try:
        yield
    finally:
        for number, handler in before.items():
            signal.signal(number, handler)


def stopped_by(came: list[int]) -> tuple[str, int]:
    """How a stop is told (the word, and the exit code a shell expects: 128 + the
    signal's number), given what `sigterm_as_ctrl_c` collected; Ctrl-C when nothing."""
    if not came:
        return "interrupted", 130
    if came[0] == signal.SIGHUP:
        return "terminated (SIGHUP: the terminal closed)", 128 + signal.SIGHUP
    return "terminated", 128 + came[0]
