"""Stall detection: the same call with the same arguments again and again.

The model gets one nudge per run; repeating past it ends the run as `stuck`.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from enum import StrEnum
from typing import Any


class StallVerdict(StrEnum):
    OK = "ok"
    NUDGE = "nudge"
    STUCK = "stuck"


def call_signature(name: str, arguments: dict[str, Any] | None, raw: str) -> str:
    canonical = json.dumps(arguments, sort_keys=True) if arguments is not None else raw
    return f"{name}:{canonical}"


@dataclass
class StallDetector:
    repeat_limit: int = 3
    _last: str | None = None
    _count: int = 0
    _nudged: bool = False

    @property
    def repeats(self) -> int:
        return self._count

    def observe(self, signature: str) -> StallVerdict:
        if signature == self._last:
            self._count += 1
        else:
            self._last, self._count = signature, 1
        if self._count < self.repeat_limit:
            return StallVerdict.OK
        if not self._nudged:
            self._nudged = True
            return StallVerdict.NUDGE
        return StallVerdict.STUCK


def nudge_text(tool: str, repeats: int) -> str:
    return (
        f"You have called {tool} with the same arguments {repeats} times in a row and got "
        "the same result. Repeating it will not change anything. Step back: re-read the "
        "relevant code or the last error, then try a different approach. If the task is "
        "done, say so without calling a tool."
    )
