"""Stall detection: the model repeating itself without progress.

Three shapes count: the same call with the same arguments `repeat_limit` times in a
row; a short cycle of calls (A, B, A, B, ...) repeated `repeat_limit` times over; and the
same file change (an edit or write with the same arguments) `repeat_limit` times in a run,
however far apart — small models fall into all three (the last one seen as one edit
re-applied between reads of ever-different line ranges). The model gets one nudge per
run; repeating past it ends the run as `stuck`.
"""

from __future__ import annotations

import json
from collections import Counter, deque
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

_CYCLE_LENGTHS = (2, 3)


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
    description: str = ""  # what the model keeps repeating, for the nudge
    _recent: deque[str] = field(default_factory=lambda: deque(maxlen=12))
    _changes: Counter[str] = field(default_factory=Counter)
    _nudged: bool = False

    @property
    def repeats(self) -> int:
        return self.repeat_limit

    def observe(self, signature: str, *, changes_files: bool = False) -> StallVerdict:
        """`changes_files`: a call that changes files the same way each time (see
        `lathe.tools.base`), counted over the whole run."""
        self._recent.append(signature)
        if changes_files:
            self._changes[signature] += 1
        described = self._repetition()
        if described is None:
            return StallVerdict.OK
        self.description = described
        if not self._nudged:
            self._nudged = True
            return StallVerdict.NUDGE
        return StallVerdict.STUCK

    def _repetition(self) -> str | None:
        recent = list(self._recent)
        limit = self.repeat_limit
        if len(recent) >= limit and len(set(recent[-limit:])) == 1:
            tool = recent[-1].split(":", 1)[0]
            return f"called {tool} with the same arguments {limit} times in a row"
        for length in _CYCLE_LENGTHS:
            window = recent[-length * limit :]
            if len(window) < length * limit:
                continue
            cycle = window[:length]
            if len(set(cycle)) > 1 and window == cycle * limit:
                tools = ", ".join(s.split(":", 1)[0] for s in cycle)
                return f"repeated the same {length} calls ({tools}) {limit} times over"
        if recent and self._changes.get(recent[-1], 0) >= limit:
            tool = recent[-1].split(":", 1)[0]
            return f"made the same {tool} call {limit} times in this run"
        return None


def nudge_text(description: str) -> str:
    return (
        f"You have {description}. Repeating it will not change anything. Step back: "
        "re-read the relevant code or the last error, then try a different approach. If "
        "the task is done, say so without calling a tool."
    )
