"""Breaking a repeat by sampling hotter: a finish handler that only steers sampling.

A small model run at a low temperature answers the same context the same way: told its
fix changed nothing, the 1.5B sent the same code back, word for word or in other words
around it, until the run was stuck. When a reply repeats an earlier one of the run (the
same tool calls, or the same code blocks, or for a reply of prose alone the same words),
the requests that follow are sampled at `temperature` (`RunState.temperature`), until a
reply is new again. It never decides anything itself: the verify gate and the stall
rules still see every reply and count the repeats as before.
"""

from __future__ import annotations

import json
import re

from lathe.agent.finish import FinishHandler, RunState
from lathe.types import AssistantMessage

_CODE_BLOCK = re.compile(r"```[^\n]*\n(.*?)```", re.DOTALL)


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
    def __init__(self, temperature: float) -> None:
        self.temperature = temperature
        self._seen: set[str] = set()

    async def begin(self, run: RunState) -> tuple[()]:
        self._seen = set()
        run.temperature = None
        return ()

    async def after_reply(self, reply: AssistantMessage, run: RunState) -> None:
        signature = reply_signature(reply)
        if not signature:
            return None
        run.temperature = self.temperature if signature in self._seen else None
        self._seen.add(signature)
        return None
