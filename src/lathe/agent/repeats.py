"""Breaking a repeat: a reply the run already had, with nothing run since that could
have changed a file, is not acted on, and the samples after it are drawn hotter.

A small model run at a low temperature answers the same context the same way: told its
fix changed nothing, the 1.5B sent the same code back, in the same or other words
around it, until the run was stuck. A reply repeats an earlier one when it makes the
same tool calls (arguments compared as parsed JSON), else shows the same code blocks,
else (prose alone) says the same words, and no call that may change files (any tool
not read-only: edit, write, bash) succeeded in between. Whenever the last reply
repeated, the requests are sampled at `temperature` (`RunState.temperature`), until one
is new.

The first `takeovers` repeats of a run that would surely end as before are taken over:
a reply without calls (a "done" is not checked again: nothing changed, so the check
would fail the same way) and one whose calls all change files the same way each time
(`changes_files_the_same_way`: edit, write). Their calls get "not acted on" results and the
model is told. Other repeats — a read (its output may have been pruned since), a test
run, a poll — run as usual, and the stall rules judge them; so do repeats past the
takeovers, which the verify gate and the stall rules end. A reply cut off by the output
limit, or one the server could not parse, is left to its own handler.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

from lathe.agent.finish import (
    CallRecord,
    ContinueWith,
    FinishHandler,
    RunState,
    changes_files_the_same_way,
    note,
)
from lathe.agent.tooling import refused_results
from lathe.types import AssistantMessage, StopReason
from lathe.words import Words

if TYPE_CHECKING:
    from lathe.tools.base import Tool

_CODE_BLOCK = re.compile(r"```[^\n]*\n(.*?)```", re.DOTALL)
_LEFT_TO_OTHERS = (StopReason.MAX_TOKENS, StopReason.UNREADABLE, StopReason.CONTENT_FILTER)


def reply_signature(reply: AssistantMessage) -> str:
    """What makes two replies the same attempt: their calls (arguments compared as
    parsed JSON), else their code blocks, else their words; "" for an empty reply."""
    calls = [[call.name, _canonical(call.arguments)] for call in reply.tool_calls]
    code = [block.strip() for block in _CODE_BLOCK.findall(reply.text)]
    if calls or code:
        return json.dumps([calls, code])
    return " ".join(reply.text.split())


def _canonical(arguments: str) -> str:
    try:
        return json.dumps(json.loads(arguments), sort_keys=True)
    except (ValueError, RecursionError):  # `[[[[...` a cut reply left
        return arguments


class RepeatBreaker(FinishHandler):
    def __init__(
        self,
        temperature: float,
        words: Words,
        tool_named: Callable[[str], Tool | None],
        takeovers: int = 2,
    ) -> None:
        self.temperature = temperature
        self.takeovers = takeovers
        self._words = words
        self._tool_named = tool_named
        self._seen: set[str] = set()  # since a file last changed
        self._taken = 0

    async def begin(self, run: RunState) -> tuple[()]:
        self._seen, self._taken = set(), 0
        run.temperature = None
        return ()

    async def after_reply(self, reply: AssistantMessage, run: RunState) -> ContinueWith | None:
        signature = reply_signature(reply)
        if not signature or reply.stop_reason in _LEFT_TO_OTHERS:
            return None
        if signature not in self._seen:
            self._seen.add(signature)
            run.temperature = None
            return None
        run.temperature = self.temperature
        ends_as_before = all(
            changes_files_the_same_way(self._tool_named(call.name)) for call in reply.tool_calls
        )
        if self._taken >= self.takeovers or not ends_as_before:
            return None
        self._taken += 1
        text = self._words.say("repeated_reply")
        if reply.tool_calls:
            return ContinueWith(
                refused_results(reply.tool_calls, text, "not run: a repeat", run.emit)
            )
        return ContinueWith((note(text),))

    async def after_calls(
        self, calls: Sequence[CallRecord], run: RunState, *, by_lathe: bool
    ) -> None:
        may_have_changed = (
            r.tool is not None and not r.tool.read_only and not r.refused and not r.output.is_error
            for r in calls
        )
        if any(may_have_changed):
            self._seen.clear()  # the same reply may now end otherwise
        return None
