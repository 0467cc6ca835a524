"""Breaking a repeat: a reply the run already had, with no file changed since, is not
acted on, and the samples after it are drawn hotter.

A small model run at a low temperature answers the same context the same way: told its
fix changed nothing, the 1.5B sent the same code back, in the same or other words
around it, until the run was stuck. A reply repeats an earlier one when it makes the
same tool calls (arguments compared as parsed JSON), else shows the same code blocks,
else (prose alone) says the same words, and no call changed a file in between. The
first `takeovers` repeats of a run are taken over: their calls get "not acted on"
results, a "done" is not checked again (nothing changed, so the check would fail the
same way), and the model is told; from then on repeats go to the verify gate and the
stall rules as before, which end the run. Whenever the last reply repeated, the
requests are sampled at `temperature` (`RunState.temperature`), until one is new.
A reply cut off by the output limit, or one the server could not parse, is left to its
own handler.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence

from lathe.agent.finish import CallRecord, ContinueWith, FinishHandler, RunState, note
from lathe.agent.tooling import refused_results
from lathe.types import AssistantMessage, StopReason
from lathe.words import Words

_CODE_BLOCK = re.compile(r"```[^\n]*\n(.*?)```", re.DOTALL)
_LEFT_TO_OTHERS = (StopReason.MAX_TOKENS, StopReason.UNREADABLE)


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
    except ValueError:
        return arguments


class RepeatBreaker(FinishHandler):
    def __init__(self, temperature: float, words: Words, takeovers: int = 2) -> None:
        self.temperature = temperature
        self.takeovers = takeovers
        self._words = words
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
        if self._taken >= self.takeovers:
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
        if any(r.changes_files and not r.refused and not r.output.is_error for r in calls):
            self._seen.clear()  # the same reply may now end otherwise
        return None
