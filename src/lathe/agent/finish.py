"""The finish seam: what happens after each reply, and how a run ends.

The loop (`agent/loop.py`) knows only this: send the conversation, get a reply, run the
reply's tool calls, repeat. Everything else — the verify gate and its baseline, code
shown in a reply, the output-limit continuation, empty replies, stalls, budgets — is a
`FinishHandler`. After each step the loop asks its handlers, in order, and each answers
with a `Decision`:

- `Finish(status, reason)` ends the run;
- `ContinueWith(messages, calls)` goes on: `messages` enter the conversation, and
  `calls` are tool calls lathe makes itself (the model did not), run through the normal
  tool path (policy gate, hooks, checkpoints, events) and handed back to every handler's
  `after_calls` with `by_lathe=True` — their results never enter the conversation,
  since no assistant message holds those calls;
- `None`: this handler has nothing to say.

Contract of each hook point (all have do-nothing defaults in `FinishHandler`):

- `time_limit(run)`: once per run, before anything else; the shortest `TimeLimit` any
  handler gives is one deadline over the whole run (the start hooks, the baseline,
  every reply, every call; stop hooks past it are cut). When it passes, whatever runs
  is cancelled (a reply still streaming leaves nothing behind), each call left without
  a result gets one saying so, and the run ends with that limit's `end`.
- `begin(run)`: once per run, after the task entered the conversation; resets the
  handler's per-run state and returns messages to add before the first turn (the
  baseline check). Raising a `UsageError` stops the run before any model call.
- `before_request(run)`: before each model request; the first `Finish` ends the run
  instead (a budget that is spent), through `ending` as any other end.
- `after_reply(reply, run)`: every reply, before its calls run. The first handler that
  answers decides and the rest are not asked; a decision here replaces the normal
  handling of the reply (its calls are not run: the loop answers each with an error
  result, so the conversation never holds an unanswered call).
- `after_calls(calls, run, by_lathe)`: after a batch of calls ran. The handlers are
  asked in order until one finishes: the messages of each `ContinueWith` are added in
  that order, and the first `Finish` ends the run after them (later handlers are not
  asked).
- `out_of_turns(run)`: the turn limit ran out; the first answer decides, else the run
  ends `max_turns`. It may still act (the verify gate checks a change made since its
  check last ran).
- `ending(end, run)`: a reply, a batch of calls or `before_request` ends the run as
  `end` (a handler's finish, the stall guard's `stuck` or a budget's `out_of_budget`
  among them); the first handler that answers replaces it. The verify gate checks a
  change made since its check last ran before a `stuck` end or a token or cost
  `out_of_budget` one, as at the turn limit, and checks before a `provider_error` end a reply
  brought (one the provider's content filter stopped): a passing check is evidence
  whatever the reply said.

A handler that ends the run on a reply gives `run.answer(reply)` as the answer: the
reply's text after that of the cut replies it continues.

A reply without tool calls that no handler takes ends the run `unverified`.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from lathe.events import AgentEvent, Evidence, RunError, RunStatus
from lathe.types import AssistantMessage, Message, ToolCall, UserMessage

if TYPE_CHECKING:
    from lathe.agent.loop import RunSpending
    from lathe.tools.base import Tool, ToolOutput


@dataclass(frozen=True)
class Finish:
    status: RunStatus
    reason: str = ""
    answer: str = ""
    evidence: Evidence | None = None
    messages: Sequence[Message] = ()
    """Added to the conversation before the run ends (what a later message should know)."""
    error: RunError | None = None
    """What failed, for a `provider_error` end caused by the provider."""


MAX_LATHE_ROUNDS = 3
"""Rounds of calls lathe makes itself (`ContinueWith.calls`) after one reply: a handler
answering its own calls with more calls must not spin forever. Calls asked for past
the last round are not run."""


@dataclass(frozen=True)
class ContinueWith:
    messages: Sequence[Message] = ()
    calls: Sequence[ToolCall] = ()
    """Calls lathe makes itself; the handlers hear of them through `after_calls` with
    `by_lathe=True` (at most `MAX_LATHE_ROUNDS` rounds of them after one reply)."""
    note: str = ""
    """How the faces label `calls`, e.g. "the code in the reply"."""


Decision = Finish | ContinueWith


@dataclass(frozen=True)
class TimeLimit:
    seconds: float
    """How long the run may take from now."""
    end: Callable[[float], Finish]
    """The run's end when the limit passes, given the seconds it ran."""


@dataclass
class CallRecord:
    """One call that ran (or was refused), as the handlers see it."""

    call: ToolCall
    tool: Tool | None  # None: the model named a tool that does not exist
    arguments: dict[str, Any] | None  # None: the arguments did not parse
    output: ToolOutput
    refused: bool = False
    """A hook (the policy gate, a pre_tool hook, the person asked) refused the call, or
    the tool declined it as a kind of call this run does not allow (`ToolRefusal`)."""
    malformed: bool = False
    """The call could not run as written: no tool of its name, or arguments that do
    not parse or do not fit the tool's parameters."""

    @property
    def changes_files(self) -> bool:
        """A call of a tool that changes files and does the same each time (edit, write)."""
        return changes_files_the_same_way(self.tool)


def changes_files_the_same_way(tool: Tool | None) -> bool:
    """A tool that changes files and does the same each time it is called so (edit,
    write; not bash, whose command may do otherwise the next time)."""
    return tool is not None and not tool.read_only and not tool.repeatable


@dataclass
class RunState:
    """What handlers may read about the run in progress, and how they report."""

    emit: Callable[[AgentEvent], None]
    turn: int = 0
    new_conversation: bool = True
    """The task is the conversation's first message (not a follow-up of an earlier run)."""
    spent: RunSpending | None = None
    """Usage, cost and time of this run so far."""
    temperature: float | None = None
    """The sampling temperature of the requests from now on, when a handler sets one
    (`agent/repeats.py`); None: the settings'."""
    cut_text: str = ""
    """The text of the replies cut by the output limit in a row, each answered
    "continue", up to the one of turn `cut_turn` (`continues`)."""
    cut_turn: int = 0

    def continues(self, cut: AssistantMessage) -> None:
        """`cut`, this turn's reply, was cut by the output limit and the next goes on
        from it (`CutOffReply`)."""
        self.cut_text = (self.cut_text if self.cut_turn == self.turn - 1 else "") + cut.text
        self.cut_turn = self.turn

    def answer(self, reply: AssistantMessage) -> str:
        """The run's answer when `reply`, this turn's, ends it: the text of the cut
        replies in a row right before it, then its own (a turn between, as an empty
        reply asked again, breaks the row). Every handler that ends a run on a reply
        gives this: the last piece alone had been the answer."""
        continued = self.cut_turn == self.turn - 1
        return self.cut_text + reply.text if continued else reply.text


class FinishHandler:
    """Base with do-nothing hook points; see the module docstring for the contract."""

    def time_limit(self, run: RunState) -> TimeLimit | None:
        return None

    async def begin(self, run: RunState) -> Sequence[Message]:
        return ()

    def before_request(self, run: RunState) -> Finish | None:
        return None

    async def after_reply(self, reply: AssistantMessage, run: RunState) -> Decision | None:
        return None

    async def after_calls(
        self, calls: Sequence[CallRecord], run: RunState, *, by_lathe: bool
    ) -> Decision | None:
        return None

    async def out_of_turns(self, run: RunState) -> Finish | None:
        return None

    async def ending(self, end: Finish, run: RunState) -> Finish | None:
        return None


@dataclass
class Combined:
    """What several handlers answered after a batch of calls: messages in order, then
    the first finish, if any."""

    messages: list[Message] = field(default_factory=list)
    finish: Finish | None = None
    calls: list[ToolCall] = field(default_factory=list)
    note: str = ""

    def add(self, decision: Decision | None) -> None:
        if isinstance(decision, ContinueWith):
            self.messages.extend(decision.messages)
            self.calls.extend(decision.calls)
            self.note = self.note or decision.note
        elif isinstance(decision, Finish) and self.finish is None:
            self.finish = decision


def note(text: str) -> UserMessage:
    """A message lathe adds to the conversation: the model reads it as a user turn,
    transcripts show it as lathe's."""
    return UserMessage(content=text, origin="lathe")
