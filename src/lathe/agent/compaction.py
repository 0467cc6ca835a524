"""The context manager the loop consults before every request: prune, and compact
with a model-written summary when the budget is crossed."""

from __future__ import annotations

from collections.abc import Callable, Sequence

from lathe.agent.context import (
    Budget,
    TokenMeter,
    compacted_history,
    conversation_tokens,
    estimate_tokens,
    plan_compaction,
    prune_tool_outputs,
    request_messages,
)
from lathe.errors import ProviderError
from lathe.events import AgentEvent, Compacted
from lathe.llm import base as llm
from lathe.llm.retry import RetryPolicy, stream_with_retry
from lathe.types import AssistantMessage, Message, ToolResultMessage, Usage, UserMessage

_SUMMARY_SYSTEM = (
    "You summarise the earlier part of a coding agent's session so that the agent can "
    "continue the task from the summary alone. Be specific and factual: file paths, "
    "function names, commands run and their results. Never invent anything."
)
_SUMMARY_REQUEST = """Summarise the session transcript above under exactly these headings:
Goal; Constraints; Progress; Decisions; Files read; Files modified; Errors still open;
Next steps. Use short bullet points."""
_RESULT_CHARS = 1_500  # of each tool result shown to the summariser


class ContextManager:
    def __init__(
        self,
        budget: Budget,
        provider: llm.Provider,
        emit: Callable[[AgentEvent], None],
        *,
        fixed_tokens: int,
        retry: RetryPolicy | None = None,
        on_compaction: Callable[[str, int, int, int], None] | None = None,
    ) -> None:
        self.budget = budget
        self.meter = TokenMeter()
        self._provider = provider
        self._emit = emit
        self._fixed_tokens = fixed_tokens
        self._retry = retry or RetryPolicy()
        self._on_compaction = on_compaction

    def record_usage(self, usage: Usage, message_count: int) -> None:
        self.meter.report(usage, message_count)

    async def prepare(self, history: list[Message]) -> list[Message]:
        """The messages for the next request; compacts `history` in place if needed."""
        sent = prune_tool_outputs(history, self.budget.tool_output_keep_tokens)
        if self.meter.estimate(sent, self._fixed_tokens) > self.budget.prompt_limit and (
            await self.compact(history, reason="budget")
        ):
            sent = prune_tool_outputs(history, self.budget.tool_output_keep_tokens)
        return request_messages(sent)

    async def compact(self, history: list[Message], *, reason: str) -> bool:
        plan = plan_compaction(history, self.budget.recent_keep_tokens)
        if plan is None or not plan.older:
            return False
        before = self._fixed_tokens + conversation_tokens(history)
        summary = await self._summarise(plan.older)
        history[:] = compacted_history(plan, summary)
        self.meter.reset()
        after = self._fixed_tokens + conversation_tokens(history)
        self._emit(Compacted(tokens_before=before, tokens_after=after, reason=reason))
        if self._on_compaction:
            self._on_compaction(history[0].content, len(plan.recent), before, after)
        return True

    async def _summarise(self, older: Sequence[Message]) -> str:
        limit_chars = self.budget.prompt_limit * 2  # about half the window, in tokens
        transcript = _transcript(older)
        if len(transcript) > limit_chars:
            transcript = "[... the start is cut ...]\n" + transcript[-limit_chars:]
        request = llm.ModelRequest(
            system=_SUMMARY_SYSTEM,
            messages=[
                UserMessage(
                    content=f"<transcript>\n{transcript}\n</transcript>\n\n{_SUMMARY_REQUEST}"
                )
            ],
            tools=[],
        )
        try:
            async for event in stream_with_retry(
                lambda: self._provider.stream(request), self._retry
            ):
                if isinstance(event, llm.Completed) and event.message.text.strip():
                    return event.message.text
        except ProviderError:
            pass  # fall through: a mechanical summary beats losing the session
        return _mechanical_summary(older)


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
    calls = [
        f"- {c.name} {c.arguments[:150]}"
        for m in messages
        if isinstance(m, AssistantMessage)
        for c in m.tool_calls
    ]
    return (
        "The model could not write a summary; these are the tool calls made so far:\n"
        + "\n".join(calls[-40:])
    )


def fixed_prompt_tokens(system: str, tool_schemas: str) -> int:
    return estimate_tokens(system) + estimate_tokens(tool_schemas)
