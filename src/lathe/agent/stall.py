"""Stall detection: the model repeating itself without progress.

Three shapes count: the same call with the same arguments `repeat_limit` times in a
row; a short cycle of calls (A, B, A, B, ...) repeated `repeat_limit` times over; and the
same file change (an edit or write with the same arguments) `repeat_limit` times in a run,
however far apart — small models fall into all three (the last one seen as one edit
re-applied between reads of ever-different line ranges). The model gets one nudge per
run; repeating past it ends the run as `stuck`, the reason naming what was repeated (a
cycle as the cycle, not as its first call).

Refusals count too, whatever the arguments: a tool whose calls the policy gate or a
hook (not the person asked, who is steering) keeps refusing — the 1.5B asked to write a
test file it may not change, read it at line N, asked again, read at N+2, for its whole
time budget — is a stall once `repeat_limit` of them came with no file change between
(a nudge naming the refusal), and `stuck` at twice that; a reply counts once per tool,
since the model had not yet seen the refusals of its own batch. A change is any call
that ran and may have changed files, by the rule the verify gate names a call's files
with (`check_files.changed_by`): a command that appends to a file counts (it had
not, and a run making progress with bash ended `stuck`); one that only looks does not,
nor a read through bash such as `sed -n 1,20p t.py` (any command outside a short table
had counted, and a refused write, a read, a refused write ... ran to the budget). It is
judged only while refusals are counted, so it costs nothing otherwise.
"""

from __future__ import annotations

import asyncio
import json
from collections import Counter, deque
from collections.abc import Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from pathlib import Path
from typing import Any

from lathe.agent.check_files import changed_by
from lathe.agent.evidence import may_change_files
from lathe.agent.finish import CallRecord, ContinueWith, Decision, Finish, FinishHandler, RunState
from lathe.agent.finish import note as lathe_note
from lathe.events import RunStatus, StallNudge
from lathe.plural import plural
from lathe.types import Message
from lathe.words import Words

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
    repeating: str = ""  # the same, for the run's end: "the same 2 calls (read, grep)"
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
        self.description, self.repeating = described
        if not self._nudged:
            self._nudged = True
            return StallVerdict.NUDGE
        return StallVerdict.STUCK

    def _repetition(self) -> tuple[str, str] | None:
        """What the model repeats, for the nudge and for the end; None when nothing."""
        recent = list(self._recent)
        limit = self.repeat_limit
        if len(recent) >= limit and len(set(recent[-limit:])) == 1:
            tool = recent[-1].split(":", 1)[0]
            said = f"called {tool} with the same arguments {limit} times in a row"
            return said, f"the same {tool} call"
        for length in _CYCLE_LENGTHS:
            window = recent[-length * limit :]
            if len(window) < length * limit:
                continue
            cycle = window[:length]
            if len(set(cycle)) > 1 and window == cycle * limit:
                tools = ", ".join(s.split(":", 1)[0] for s in cycle)
                said = f"repeated the same {length} calls ({tools}) {limit} times over"
                return said, f"the same {length} calls ({tools})"
        if recent and self._changes.get(recent[-1], 0) >= limit:
            tool = recent[-1].split(":", 1)[0]
            return f"made the same {tool} call {limit} times in this run", f"the same {tool} call"
        return None


class StallGuard(FinishHandler):
    """The stall rules above as a finish handler: after each batch of calls (the model's
    or lathe's own), a nudge the first time, `stuck` after it."""

    def __init__(self, words: Words, repeat_limit: int = 3, *, workspace: Path) -> None:
        self._words = words
        self._workspace = workspace
        self._limit = repeat_limit
        self._detector = StallDetector(repeat_limit)
        self._refusals: Counter[str] = Counter()
        self._refused_by: dict[str, set[str]] = {}  # tool: who refused its counted calls
        self._refusals_nudged = False

    async def begin(self, run: RunState) -> Sequence[Message]:
        self._detector = StallDetector(self._limit)
        self._refusals = Counter()
        self._refused_by = {}
        self._refusals_nudged = False
        return ()

    async def after_calls(
        self, calls: Sequence[CallRecord], run: RunState, *, by_lathe: bool
    ) -> Decision | None:
        verdict, stalled, repeating = StallVerdict.OK, "", ""
        in_this_batch: set[str] = set()
        for record in calls:
            signature = call_signature(record.call.name, record.arguments, record.call.arguments)
            if signature in in_this_batch:
                # Written in one go, before any result: a duplicate, not a loop (four
                # identical reads in a reply ended the run before it saw a result).
                continue
            in_this_batch.add(signature)
            seen = self._detector.observe(signature, changes_files=record.changes_files)
            if seen is not StallVerdict.OK and verdict is not StallVerdict.STUCK:
                verdict, stalled, repeating = seen, record.call.name, self._detector.repeating
        if verdict is StallVerdict.STUCK:
            reason = (
                "the model kept showing the same change to a file"
                if by_lathe
                else f"the model kept repeating {repeating}"
            )
            return Finish(RunStatus.STUCK, reason=reason)
        if verdict is StallVerdict.NUDGE:
            run.emit(StallNudge(tool=stalled, repeats=self._limit))
            text = self._words.say("nudge", description=self._detector.description)
            return ContinueWith(messages=(lathe_note(text),))
        return await self._count_refusals(calls, run)

    async def _count_refusals(self, calls: Sequence[CallRecord], run: RunState) -> Decision | None:
        """A batch counts once per tool it had refused: the model had not yet seen those
        refusals when it asked, so only asking again, turn after turn, is the loop."""
        refused_now: set[str] = set()
        for record in calls:
            if (self._refusals or refused_now) and await self._may_have_changed_files(record):
                self._refusals.clear()  # progress: earlier refusals were not a loop
                self._refused_by.clear()
                refused_now.clear()
            elif _not_run(record):
                refused_now.add(record.call.name)
                by = str(record.output.details.get("denied_by", ""))
                self._refused_by.setdefault(record.call.name, set()).add(by)
        self._refusals.update(refused_now)
        if not self._refusals:
            return None
        tool, count = self._refusals.most_common(1)[0]
        if count >= 2 * self._limit:
            turns = f"in {plural(count, 'turn')} without a change in between"
            if self._refused_by.get(tool) == {"hook"}:  # not the model's doing: say whose
                last = [r for r in calls if _not_run(r) and r.call.name == tool]
                why = f": {last[-1].output.details.get('denied', '')}" if last else ""
                return Finish(
                    RunStatus.STUCK,
                    reason=f"a pre_tool hook refused every {tool} call ({turns}){why}",
                )
            return Finish(
                RunStatus.STUCK,
                reason=f"the model kept asking for {tool} calls that are refused ({turns})",
            )
        if count >= self._limit and not self._refusals_nudged:
            self._refusals_nudged = True
            run.emit(StallNudge(tool=tool, repeats=count))
            refused = [r for r in calls if _not_run(r) and r.call.name == tool]
            reason = _first_line(refused[-1].output.content) if refused else "refused"
            text = self._words.say("refusals_nudge", tool=tool, count=count, reason=reason)
            return ContinueWith(messages=(lathe_note(text),))
        return None

    async def _may_have_changed_files(self, record: CallRecord) -> bool:
        """A call that ran and may have changed files: an edit or a write that
        succeeded, a command that may change some file (`echo x >> app.py`, `python
        fix.py`), a child that may change files; not a read, an `explore` child, a
        command that only looks or names no file it changes (`sed -n 1,20p t.py`)."""
        if record.refused or record.malformed or record.tool is None:
            return False
        arguments = record.arguments or {}
        if record.tool.read_only_call(arguments) or not may_change_files(record):
            return False
        # Off the event loop: the guard's reading of a command matches its globs.
        named = await asyncio.to_thread(changed_by, record.tool, arguments, self._workspace)
        return named != []


def _first_line(text: str) -> str:
    line = text.strip().splitlines()[0] if text.strip() else ""
    return line.removeprefix("Error: ").removeprefix("Denied: ").rstrip(".")[:200]


def _not_run(record: CallRecord) -> bool:
    """A call refused (not by a person, who says no to steer, not in a loop to stop), or
    one that cannot run as written: an unknown tool asked for with other arguments each
    turn ran to the turn limit."""
    if record.malformed:
        return True
    return record.refused and record.output.details.get("denied_by") != "user"
