"""The context manager the loop consults before every request: prune, and compact
with a model-written summary when the budget is crossed.

A compaction must shrink the history. One that does not (a summary as long as what it
replaces: the 1.5B once turned 8,304 tokens into 8,329, and the run went on compacting
every turn) is thrown away: the request drops every older tool output instead, no new
compaction is tried until the part a summary would replace has doubled, and when the
request the provider still refuses ends the run with a `ContextTooLong` saying so.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace

from lathe.agent.context import (
    Budget,
    TokenMeter,
    compacted_history,
    compaction_parts,
    conversation_tokens,
    estimate_tokens,
    plan_compaction,
    prune_tool_outputs,
)
from lathe.agent.request_view import RequestView
from lathe.chunked import ChunkCache, Chunks
from lathe.errors import ContextTooLong, ProviderError
from lathe.events import AgentEvent, Compacted, Notice
from lathe.llm import base as llm
from lathe.llm.retry import RetryPolicy, stream_with_retry
from lathe.types import AssistantMessage, Message, ToolResultMessage, Usage, UserMessage
from lathe.words import Words, load_words

_RESULT_CHARS = 1_500  # of each tool result shown to the summariser


@dataclass(frozen=True)
class PromptPart:
    """A part of the system prompt the user wrote and can shrink (the instruction
    files, the memory): a first request that does not fit names the parts that fill it,
    where it had blamed the task."""

    what: str  # "the instruction files (AGENTS.md, ../AGENTS.md)"
    tokens: int
    smaller: str  # what the user can do: "shorten the instruction files or lower ..."


class ContextManager:
    def __init__(
        self,
        budget: Budget,
        provider: llm.Provider,
        emit: Callable[[AgentEvent], None],
        *,
        fixed_tokens: int | Callable[[], int],
        retry: RetryPolicy | None = None,
        on_compaction: Callable[[str, int, int, int], None] | None = None,
        words: Words | None = None,
        kept_verbatim: Callable[[], list[str]] | None = None,
        prompt_parts: Sequence[PromptPart] | Callable[[], Sequence[PromptPart]] = (),
    ) -> None:
        """`kept_verbatim`: the texts a compaction must carry over word for word
        (`AgentHooks.kept_verbatim`); `prompt_parts`: what of the system prompt and
        tool definitions the user can shrink, for `cannot_fit` to name (a callable, as
        `fixed_tokens`, when tools can join after the start)."""
        self.budget = budget
        self.meter = TokenMeter()
        self._view = RequestView()
        self._provider = provider
        self._emit = emit
        # What every request carries besides the conversation: the system prompt and the
        # tool specs. A callable when tools can join after the start (MCP servers' tools).
        self._fixed = fixed_tokens if callable(fixed_tokens) else lambda: fixed_tokens
        self._retry = retry or RetryPolicy()
        self._on_compaction = on_compaction
        self._words = words or load_words()
        self._kept_verbatim = kept_verbatim or list
        self._prompt_parts = prompt_parts if callable(prompt_parts) else lambda: prompt_parts
        # Which of the texts to keep (`_kept`) each chunk of the request holds, and the
        # last opening message that had to carry some of them.
        self._kept: tuple[str, ...] = ()
        self._holding = ChunkCache(self._kept_in, _union)
        self._opened: tuple[object, tuple[str, ...], tuple[Message, ...]] | None = None
        # After a compaction that did not shrink the history: send no older tool output,
        # and try again only once what a summary would replace has this many tokens.
        self._squeezed = False
        self._retry_at_tokens = 0
        self.too_short = True  # of the last compact(): see there
        self._output_asked: int | None = None  # max_tokens of the last request
        self.on_reply: Callable[[llm.ModelRequest, AssistantMessage, float, int], object] = (
            _uncounted
        )
        """Called with each summary request, its reply, its latency (ms) and its retries:
        the agent given this manager sets it when it is made, to report the request
        (`model_request`) and count it in its usage, and in the run's usage and cost,
        which the budgets judge, when one is going (the summaries had been left out: two
        priced at $4.50 in a run that said $0.10; a `/compact` before an agent's first
        run, in none)."""
        self._lowered_output = False  # the last shrink only asked for less output

    def output_tokens(self, wanted: int | None) -> int | None:
        """The output room the request `prepare` just built may ask for: `wanted` (the
        model's max output), less when its prompt leaves less of the window, since a
        server refuses a prompt plus max_tokens over it — but never less than the
        budget's reserve, which compaction keeps free. None when `wanted` is None."""
        if wanted is None:
            return None
        left = self.budget.context_window - self.meter.estimate(self._view, self._fixed())
        self._output_asked = max(min(wanted, left), min(wanted, self._least_output))
        return self._output_asked

    @property
    def _least_output(self) -> int:
        """The output room no request asks for less than: the reserve, and never so
        little the answer is useless (0 is a server's error, not "too long")."""
        return max(self.budget.output_reserve, _LEAST_OUTPUT_TOKENS)

    def record_usage(self, usage: Usage, message_count: int) -> None:
        self.meter.report(usage, message_count)

    async def prepare(self, history: list[Message]) -> Sequence[Message]:
        """The messages for the next request; compacts `history` in place if needed.
        Sent even when the estimate stays above the limit (it runs high on purpose):
        only the provider's refusal ends the run (`cannot_fit`)."""
        sent = self._view.update(history, self._keep_tokens())
        if self.meter.estimate(self._view, self._fixed()) <= self.budget.compact_limit:
            return self._with_kept_verbatim(sent)
        if await self.compact(history, reason="budget"):
            sent = self._view.update(history, self._keep_tokens())
        too_big = self._fixed() + self._view.tokens(0) > self.budget.prompt_limit
        if too_big and not self._squeezed:
            self._squeezed = True
            sent = self._view.update(history, self._keep_tokens())
        return self._with_kept_verbatim(sent)

    def _with_kept_verbatim(self, sent: Chunks[Message]) -> Chunks[Message]:
        """`sent`, with each text that must survive (`kept_verbatim`) and that pruning
        took out along with its tool output added to the opening message. Searched for
        chunk by chunk, so only the chunks that changed since the last request are."""
        kept = tuple(self._kept_verbatim())
        if not kept or not sent or not isinstance(sent[0], UserMessage):
            return sent
        if kept != self._kept:
            self._kept = kept
            self._holding.clear()
        held = _union(self._holding.map(sent))
        missing = tuple(text for text in kept if text not in held)
        if not missing:
            return sent
        first, *rest = sent.chunks
        if self._opened is None or self._opened[0] is not first or self._opened[1] != missing:
            opening = replace(first[0], content="\n\n".join([first[0].content, *missing]))
            self._opened = (first, missing, (opening, *first[1:]))
        return Chunks((self._opened[2], *rest))

    def _kept_in(self, message: Message) -> frozenset[str]:
        if isinstance(message, AssistantMessage):
            return frozenset()
        return frozenset(text for text in self._kept if text in message.content)

    def cannot_fit(self, history: list[Message], refusal: ContextTooLong) -> str:
        """Why the run stops when the provider refuses a request lathe cannot shrink,
        in the server's numbers where it gave them."""
        if refusal.request_tokens and refusal.window_tokens:
            size = (
                f"{refusal.request_tokens:,} tokens by the server's count for a window of "
                f"{refusal.window_tokens:,}"
            )
        else:
            size = (
                f"about {self._estimate(self._pruned(history)):,} tokens by lathe's "
                f"estimate for a limit of {self.budget.prompt_limit:,}"
            )
        if not any(isinstance(m, AssistantMessage) for m in history):
            return f"the first request does not fit the model's window: {size}, " + (
                self._what_fills(conversation_tokens(history))
            )
        return (
            f"the conversation no longer fits the model's window: {size}, with older tool "
            "outputs dropped and compaction unable to shrink it; start a new session with "
            "the task restated, or use a model with a larger context window"
        )

    def _what_fills(self, task_tokens: int) -> str:
        """What a first request holds and what to do: when the system prompt is most
        of it, the parts of it the user wrote that fill it are named (a 25 KB AGENTS.md
        was never mentioned, and the advice was a smaller task message)."""
        fixed = self._fixed()
        larger = "use a model with a larger window (or start its server with a larger context size)"
        held = f"of which the system prompt and tool definitions are about {fixed:,}"
        # A part of a quarter of the system prompt or more is worth the user's work.
        filling = sorted(
            (p for p in self._prompt_parts() if p.tokens * 4 >= fixed),
            key=lambda p: p.tokens,
            reverse=True,
        )
        if task_tokens >= fixed or not filling:
            return f"{held}; {larger}, or a smaller task message"
        parts = "".join(f", {p.what} about {p.tokens:,} of them" for p in filling)
        return f"{held}{parts}; " + "; or ".join([*(p.smaller for p in filling), larger])

    async def shrink(
        self, history: list[Message], *, refusal: ContextTooLong, again: bool = False
    ) -> bool:
        """Make the next request smaller after the provider refused it as too long: take
        the window and the size the server gave; ask for less output when the prompt
        fits with the reserve (each time less, so this ends), else, unless this is
        `again` after a shrink for the same reply, compact, or drop every older tool
        output. False when nothing would make the request smaller: sending it again
        would only be refused again."""
        self._learn_from(refusal, len(history))
        lowered, self._lowered_output = self._lowered_output and again, False
        if self._asks_less_output(refusal):
            self._lowered_output = True
            return True
        if again and not lowered:  # a retry after asking for less output may compact
            return False
        if await self.compact(history, reason="context_too_long"):
            return True
        if self._squeezed:
            return False
        before = self._estimate(self._pruned(history))
        self._squeezed = True
        return self._estimate(self._pruned(history)) < before

    def _asks_less_output(self, refusal: ContextTooLong) -> bool:
        """Whether the prompt the server counted fits its window, with less output room
        than the refused request asked for: sent again as it is, with less asked."""
        if not (refusal.request_tokens and refusal.window_tokens and self._output_asked):
            return False
        left = refusal.window_tokens - refusal.request_tokens
        # Below the least a request asks for, asking again would ask the same: a loop.
        return self._least_output <= left < self._output_asked

    def _learn_from(self, refusal: ContextTooLong, message_count: int) -> None:
        if refusal.request_tokens:
            self.meter.report(Usage(input_tokens=refusal.request_tokens), message_count)
        window = refusal.window_tokens
        if not window or window >= self.budget.context_window:
            return
        self._emit(
            Notice(
                level="warning",
                message=f"the server says the model's window is {window:,} tokens, not the "
                f"{self.budget.context_window:,} lathe assumed: working within {window:,} "
                "(set context_window for this model in the config to say so up front)",
            )
        )
        self.budget = self.budget.narrowed_to(window)

    async def compact(self, history: list[Message], *, reason: str) -> bool:
        """Replace the older part of `history` with a summary, when that shrinks it.
        False when it did not: `self.too_short` tells whether the model was not even
        asked (too little to summarise) or its summary did not save anything."""
        self.too_short = True
        plan = plan_compaction(history, self.budget.recent_keep_tokens)
        if plan is None or not plan.older:
            return False
        older_tokens = conversation_tokens(plan.older)
        # A summary is a few hundred tokens: a shorter past cannot shrink (a model call
        # spent to learn that, as /compact on a new session did).
        if older_tokens < max(self._retry_at_tokens, _MIN_SUMMARISED_TOKENS):
            return False
        self.too_short = False
        before = self._fixed() + conversation_tokens(history)
        summary = await self._summarise(plan.task, plan.older)
        compacted = compacted_history(
            plan,
            summary,
            self._words.say("summary_heading"),
            self._kept_verbatim(),
            self._words.say("request_heading"),
        )
        after = self._fixed() + conversation_tokens(compacted)
        # Judged by what a request carries (old tool outputs are pruned from it anyway).
        sent_before = self._estimate(self._pruned(history))
        sent_after = self._estimate(self._pruned(compacted))
        if sent_after >= sent_before:
            self._retry_at_tokens = 2 * older_tokens
            self._emit(
                Notice(
                    level="warning",
                    message=f"compaction did not shrink the request ({sent_before:,} -> "
                    f"{sent_after:,} tokens): kept the conversation as it was and dropped "
                    "older tool outputs from the request instead",
                )
            )
            return False
        history[:] = compacted
        self._view.reset()
        self.meter.reset()
        self._squeezed, self._retry_at_tokens = False, 0
        self._emit(Compacted(tokens_before=before, tokens_after=after, reason=reason))
        if self._on_compaction:
            self._on_compaction(history[0].content, len(plan.recent), before, after)
        return True

    def _keep_tokens(self) -> int:
        return 0 if self._squeezed else self.budget.tool_output_keep_tokens

    def _pruned(self, history: list[Message]) -> list[Message]:
        return prune_tool_outputs(history, self._keep_tokens())

    def _estimate(self, messages: Sequence[Message]) -> int:
        return self._fixed() + conversation_tokens(messages)

    async def _summarise(self, task: UserMessage, older: Sequence[Message]) -> str:
        """The summary of `older`, asked with the task at the head of the transcript so
        the summary's goal is the task's (a long transcript loses its start instead)."""
        limit_chars = self.budget.prompt_limit * 2  # about half the window, in tokens
        opening, earlier, _ = self._opening_parts(task)
        # What an earlier compaction wrote goes whole after the task's cut head: the new
        # summary replaces that one, so it must have read it.
        written = task.content[len(opening) :]
        head = (
            _transcript([UserMessage(content=opening)])[: limit_chars // 4]
            + written[: limit_chars // 2]
        )
        transcript = _transcript(older)
        if len(head) + len(transcript) > limit_chars:
            kept = transcript[-(limit_chars - len(head)) :]
            transcript = f"{head}\n[... the part after the task is cut ...]\n{kept}"
        else:
            transcript = f"{head}\n{transcript}"
        ask = self._words.say("compaction_request", transcript=transcript)
        request = llm.ModelRequest(
            system=self._words.say("compaction_system"),
            messages=[UserMessage(content=ask)],
            tools=[],
            # A summary longer than this no longer shrinks what it replaces much.
            max_output_tokens=max(
                _LEAST_OUTPUT_TOKENS, min(_SUMMARY_MAX_TOKENS, self.budget.context_window // 8)
            ),
        )
        why = "it answered nothing"
        started, retries = time.monotonic(), 0

        def retried(*_: object) -> None:
            nonlocal retries
            retries += 1

        try:
            async for event in stream_with_retry(
                lambda: self._provider.stream(request), self._retry, retried
            ):
                if isinstance(event, llm.Completed):  # paid for, whatever it says
                    latency_ms = (time.monotonic() - started) * 1000
                    self.on_reply(request, event.message, latency_ms, retries)
                    if event.message.text.strip():
                        return event.message.text
        except ProviderError as exc:
            why = str(exc)  # a mechanical summary beats losing the session
        self._emit(
            Notice(
                level="warning",
                message=f"the model could not summarise the older conversation ({why}): "
                "it is replaced by what the model said and the calls it made",
            )
        )
        mechanical = _mechanical_summary(older)
        return f"{earlier.strip()}\n\n{mechanical}" if earlier else mechanical

    def _opening_parts(self, task: UserMessage) -> tuple[str, str | None, str | None]:
        heading, asked = self._words.say("summary_heading"), self._words.say("request_heading")
        return compaction_parts(task.content, heading, asked)


_MIN_SUMMARISED_TOKENS = 400
_SUMMARY_MAX_TOKENS = 4096
_LEAST_OUTPUT_TOKENS = 256  # a request asks for no less output room (0 is an error)
# The fallback when no summary comes: the newest of the model's words and calls.
_SAID_CHARS = 600
_MECHANICAL_LINES = 60
_MECHANICAL_CHARS = 12_000


def _uncounted(*_: object) -> None:
    """What a summary request is reported to by a manager no agent was given (one used
    alone)."""


def _union(sets: Sequence[frozenset[str]]) -> frozenset[str]:
    return frozenset().union(*sets)


def _transcript(messages: Sequence[Message]) -> str:
    lines = []
    for message in messages:
        match message:
            case UserMessage(content=content):
                lines.append(f"USER: {content}")
            case AssistantMessage():
                if message.text.strip():
                    lines.append(f"ASSISTANT: {message.text.strip()}")
                lines.extend(f"CALL {c.name} {c.arguments}" for c in message.tool_calls)
            case ToolResultMessage(name=name, content=content, is_error=is_error):
                body = (
                    content if len(content) <= _RESULT_CHARS else content[:_RESULT_CHARS] + " ..."
                )
                lines.append(f"RESULT {name}{' (error)' if is_error else ''}: {body}")
    return "\n".join(lines)


def _mechanical_summary(messages: Sequence[Message]) -> str:
    """What the model said and the calls it made, the newest kept within a bound: its
    own findings are what a summary exists to keep."""
    lines = []
    for message in messages:
        if isinstance(message, AssistantMessage):
            if text := " ".join(message.text.split()):
                lines.append(f"- said: {text[:_SAID_CHARS]}")
            lines += [f"- {c.name} {c.arguments[:150]}" for c in message.tool_calls]
    kept: list[str] = []
    size = 0
    for line in reversed(lines):
        size += len(line)
        if len(kept) >= _MECHANICAL_LINES or size > _MECHANICAL_CHARS:
            break
        kept.append(line)
    return (
        "The model could not write a summary; this is what it said and the tool calls "
        "it made so far:\n" + "\n".join(reversed(kept))
    )


def fixed_prompt_tokens(system: str, tool_schemas: str) -> int:
    return estimate_tokens(system) + estimate_tokens(tool_schemas)
