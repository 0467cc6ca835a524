"""Finish handlers for replies that cannot be taken as they are: one cut off by the
output limit, one the server could not parse, one the provider's content filter stopped,
and an empty one."""

from __future__ import annotations

from lathe.agent.finish import ContinueWith, Decision, Finish, FinishHandler, RunState
from lathe.agent.finish import note as lathe_note
from lathe.agent.tooling import refused_results
from lathe.events import Notice, RunError, RunStatus
from lathe.llm.text_calls import holds_text_call
from lathe.types import AssistantMessage, StopReason
from lathe.words import Words

_EMPTY_ONCE = "the model sent an empty reply; asking again"
_EMPTY_TWICE = "the model sent an empty reply (no text, no tool call) twice in a row"


class CutOffReply(FinishHandler):
    """A reply cut by the output limit (`max_tokens`). Without calls it gets a
    "continue" message instead of ending the run. With calls, none of them runs: their
    arguments may be cut mid-token (a "repaired" `new_string` once wrote half a line),
    so each gets an error result asking for a smaller step. A call written as text
    (`llm.text_calls.holds_text_call`) is one too: the model is asked for the whole call
    again, since the rest it would continue with is never read as a call. `limit` cut
    replies in a row that make no progress — calls none of which ran, or the same text
    again — end the run `stuck`: the same cut `write` ran to the turn limit, 50
    full-size replies."""

    def __init__(self, words: Words, limit: int = 3) -> None:
        self._words = words
        self._limit = limit
        self._in_a_row = 0
        self._last_text: str | None = None

    async def begin(self, run: RunState) -> tuple[()]:
        self._in_a_row, self._last_text = 0, None
        return ()

    async def after_reply(self, reply: AssistantMessage, run: RunState) -> Decision | None:
        if reply.stop_reason is not StopReason.MAX_TOKENS:
            self._in_a_row, self._last_text = 0, None
            return None
        written_call = not reply.tool_calls and holds_text_call(reply.text)
        if not reply.tool_calls and not written_call:  # the answer goes on from its text
            run.continues(reply)  # (`RunState.answer`)
        stalled = bool(reply.tool_calls) or written_call or reply.text == self._last_text
        self._in_a_row = self._in_a_row + 1 if stalled else 0
        self._last_text = reply.text
        if self._in_a_row >= self._limit:
            return Finish(
                RunStatus.STUCK,
                reason=f"the model's reply was cut by the output limit {self._in_a_row} times "
                "in a row with nothing done (raise the model's max_output_tokens, or ask for "
                "smaller steps)",
            )
        if reply.tool_calls:
            text = self._words.say("cut_off_call")
            results = refused_results(reply.tool_calls, text, "not run: reply cut off", run.emit)
            return ContinueWith(messages=results)
        told = "cut_off_text_call" if written_call else "cut_off_reply"
        return ContinueWith(messages=(lathe_note(self._words.say(told)),))


class FilteredReply(FinishHandler):
    """A reply the provider's content filter stopped (`StopReason.CONTENT_FILTER`:
    OpenAI's `content_filter`, Anthropic's `refusal`) is not one the model finished: the
    run ends `provider_error` saying so, with what the reply said as the answer and its
    calls unrun (their arguments may be cut). Not `unverified`, exit 0: the run had
    ended as a success with a half sentence for an answer and no word of the filter;
    `provider_error` says the provider, not the model or the task, ended it (as two
    empty replies do), and exit 3 lets a script or `lathe batch --retry-errors` run it
    again. The verify gate checks first (`VerifyGate.ending`): a passing check is
    evidence whatever the reply said."""

    async def after_reply(self, reply: AssistantMessage, run: RunState) -> Decision | None:
        if reply.stop_reason is not StopReason.CONTENT_FILTER:
            return None
        error = RunError(kind="provider", message=FILTERED)
        return Finish(
            RunStatus.PROVIDER_ERROR, reason=FILTERED, answer=run.answer(reply), error=error
        )


FILTERED = (
    "the provider's content filter stopped the model's reply before it was finished, so "
    "the task may be unfinished (the answer is what it said until then)"
)


class UnreadableReply(FinishHandler):
    """A reply the server could not parse (`StopReason.UNREADABLE`: a tool call whose
    JSON the model broke) is the model's mistake, not an outage: the model is told and
    writes it again. So is a tool call written as text that lathe could not read
    (`llm.text_calls`): that reply keeps its text, so the model sees what it wrote.
    `limit` such replies in a row end the run `stuck`."""

    def __init__(self, words: Words, limit: int) -> None:
        self._words = words
        self._limit = limit
        self._in_a_row = 0

    async def begin(self, run: RunState) -> tuple[()]:
        self._in_a_row = 0
        return ()

    async def after_reply(self, reply: AssistantMessage, run: RunState) -> Decision | None:
        if reply.stop_reason is not StopReason.UNREADABLE:
            self._in_a_row = 0
            return None
        self._in_a_row += 1
        as_text = bool(reply.text)  # from the server, an unreadable reply has no text
        what, why = _TEXT_CALL_UNREAD if as_text else _SERVER_UNREAD
        if self._in_a_row >= self._limit:
            reason = f"{what} {self._in_a_row} times in a row ({why})"
            return Finish(RunStatus.STUCK, reason=reason)
        run.emit(Notice(level="warning", message=f"{what} ({why}); asking again"))
        told = "unreadable_text_call" if as_text else "unreadable_reply"
        return ContinueWith(messages=(lathe_note(self._words.say(told)),))


_SERVER_UNREAD = ("the server could not parse the model's tool call", "malformed JSON")
_TEXT_CALL_UNREAD = (
    "the model's tool call written as text could not be read",
    "malformed JSON, or no such tool",
)


class EmptyReply(FinishHandler):
    """An empty reply (no text, no call, not cut off) is asked again once. A second in a
    row ends the run `provider_error`, unless `gated`: then the verify gate decides, as
    for "done". (The loop never records an empty reply in the conversation.)"""

    def __init__(self, *, gated: bool) -> None:
        self._gated = gated
        self._in_a_row = 0

    async def begin(self, run: RunState) -> tuple[()]:
        self._in_a_row = 0
        return ()

    async def after_reply(self, reply: AssistantMessage, run: RunState) -> Decision | None:
        if not is_empty(reply):
            self._in_a_row = 0
            return None
        self._in_a_row += 1
        if self._in_a_row == 1:
            run.emit(Notice(level="warning", message=_EMPTY_ONCE))
            return ContinueWith()
        if self._gated:
            return None
        error = RunError(kind="provider", message=_EMPTY_TWICE)
        return Finish(RunStatus.PROVIDER_ERROR, reason=_EMPTY_TWICE, error=error)


def is_empty(reply: AssistantMessage) -> bool:
    """No text and no call, and not cut off (a cut-off reply gets "continue"). An
    unreadable reply from the server is empty too: nothing of it enters the
    conversation (one whose text call lathe could not read keeps its text)."""
    cut_off = reply.stop_reason is StopReason.MAX_TOKENS
    return not reply.tool_calls and not reply.text.strip() and not cut_off
