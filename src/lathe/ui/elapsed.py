"""How long a tool call or the verify command has been running, for `lathe run`'s
progress on stderr, so a long command is not mistaken for a hung lathe.

On a terminal it is one line redrawn in place (carriage return, erase to the end of the
line) once something has run for `SHOW_AFTER_S`, updated every second and erased before
any other line is written. Without a terminal (a CI log, a pipe) a line that is never
rewritten would be noise, so it is one plain line every `HEARTBEAT_S`: the log shows
life without being flooded.

The clock runs in a daemon thread, apart from the event loop, so it keeps time even
while the loop is busy; every write to the stream holds one lock.
"""

from __future__ import annotations

import os
import threading
import time
from typing import TextIO

SHOW_AFTER_S = 2.0
HEARTBEAT_S = 10.0
_TICK_S = 0.2
_ERASE = "\r\x1b[K"


class ElapsedLine:
    """Owns the progress stream: `write` prints a line, `start`/`stop` bracket something
    that runs (`key` names it, `label` is what is shown), `clear` forgets everything
    still running (the run ended); the clock's thread ends when nothing runs."""

    def __init__(self, out: TextIO, *, tty: bool | None = None) -> None:
        self._out = out
        self._tty = _isatty(out) if tty is None else tty
        self._lock = threading.Lock()
        self._running: dict[str, tuple[str, float]] = {}  # key -> (label, started)
        self._shown = ""  # the in-place line now on the terminal
        self._beats = 0  # heartbeat lines written for the oldest running thing
        self._thread: threading.Thread | None = None

    def write(self, text: str) -> None:
        with self._lock:
            self._erase()
            self._out.write(text + "\n")
            self._out.flush()

    def start(self, key: str, label: str) -> None:
        with self._lock:
            if not self._running:
                self._beats = 0
            self._running[key] = (label, time.monotonic())
            if self._thread is None:
                self._thread = threading.Thread(target=self._clock, daemon=True)
                self._thread.start()

    def stop(self, key: str) -> None:
        with self._lock:
            oldest = next(iter(self._running), None)
            self._running.pop(key, None)
            if key == oldest:
                self._beats = 0
            if not self._running:
                self._erase()

    def clear(self) -> None:
        with self._lock:
            self._running.clear()
            self._erase()

    def _clock(self) -> None:
        while True:
            time.sleep(_TICK_S)
            with self._lock:
                if not self._running:
                    self._thread = None
                    return
                self._tick(time.monotonic())

    def _tick(self, now: float) -> None:
        label, started = next(iter(self._running.values()))
        others = len(self._running) - 1
        if others:
            label += f" (+{others} more)"
        elapsed = now - started
        if self._tty:
            if elapsed >= SHOW_AFTER_S:
                self._draw(f"  {label} ... {_duration(elapsed)}")
        elif elapsed >= HEARTBEAT_S * (self._beats + 1):
            self._beats = int(elapsed // HEARTBEAT_S)
            shown = _duration(self._beats * HEARTBEAT_S)
            self._out.write(f"  {label} ... still running ({shown})\n")
            self._out.flush()

    def _draw(self, text: str) -> None:
        text = text[: max(_columns(self._out) - 1, 20)]  # a wrapped line cannot be redrawn
        if text != self._shown:
            self._out.write(_ERASE + text)
            self._out.flush()
            self._shown = text

    def _erase(self) -> None:
        if self._shown:
            self._out.write(_ERASE)
            self._shown = ""


def _duration(seconds: float) -> str:
    whole = int(seconds)
    return f"{whole}s" if whole < 60 else f"{whole // 60}m{whole % 60:02d}s"


def _isatty(out: TextIO) -> bool:
    try:
        return out.isatty()
    except (AttributeError, ValueError):  # a closed or file-less stream
        return False


def _columns(out: TextIO) -> int:
    try:
        columns = os.get_terminal_size(out.fileno()).columns
    except (AttributeError, ValueError, OSError):
        return 80
    return columns or 80  # a terminal nobody sized reports 0
