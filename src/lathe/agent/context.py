"""The context budget: what each request carries, so the prompt never outgrows the window.

Two mechanisms, cheapest first:
- pruning: old tool outputs beyond a token budget are replaced, in the request only, by
  a one-line stub naming what was there and how to get it again; the newest results
  stay whole and the stored history keeps everything;
- compaction: when the estimate crosses the window minus the output reserve (or the
  provider says the prompt is too long), the older part of the history is replaced by a
  model-written summary. The original task stays verbatim, the recent turns stay
  verbatim, and the cut only ever falls before a user or assistant message, so a tool
  call is never separated from its result.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Protocol

from lathe.types import (
    AssistantMessage,
    Message,
    ToolCall,
    ToolResultMessage,
    Usage,
    UserMessage,
)


@dataclass(frozen=True)
class Budget:
    context_window: int = 128_000
    output_reserve: int = 16_000
    tool_output_keep_tokens: int = 40_000  # newest tool outputs kept whole, in total
    recent_keep_tokens: int = 20_000  # verbatim tail kept at compaction
    compact_threshold: float = 1.0  # share of `prompt_limit` at which compaction starts

    @property
    def prompt_limit(self) -> int:
        return max(self.context_window - self.output_reserve, 1_000)

    @property
    def compact_limit(self) -> int:
        """The estimate above which the conversation is compacted."""
        return int(self.prompt_limit * self.compact_threshold)

    @classmethod
    def fitted(
        cls,
        window: int,
        *,
        output_reserve: int,
        tool_output_keep_tokens: int,
        compact_threshold: float = 1.0,
    ) -> Budget:
        """A budget for `window`, each part capped at a share of it, so a small window
        keeps room for the conversation and something older to compact."""
        return cls(
            context_window=window,
            output_reserve=min(output_reserve, window // 4),
            tool_output_keep_tokens=min(tool_output_keep_tokens, window // 3),
            recent_keep_tokens=window // 5,
            compact_threshold=compact_threshold,
        )

    def narrowed_to(self, window: int) -> Budget:
        """This budget for a smaller window (the server told the model's real one)."""
        return Budget.fitted(
            window,
            output_reserve=self.output_reserve,
            tool_output_keep_tokens=self.tool_output_keep_tokens,
            compact_threshold=self.compact_threshold,
        )


def estimate_tokens(text: str) -> int:
    # About 3 bytes a token: code tokenizes worse than prose, and an estimate that runs
    # low overflows a small window (measured with the local model at 4 bytes a token: a
    # request the 6,144-token budget let through was 9,544 real tokens). Reported usage
    # corrects the estimate after every reply.
    return len(text.encode("utf-8", "replace")) // 3 + 1


def message_tokens(message: Message) -> int:
    match message:
        case UserMessage(content=content) | ToolResultMessage(content=content):
            return estimate_tokens(content) + 4
        case AssistantMessage():
            calls = sum(estimate_tokens(c.name + c.arguments) + 8 for c in message.tool_calls)
            thinking = sum(estimate_tokens(t.text) for t in message.thinking)
            return estimate_tokens(message.text) + calls + thinking + 4


def conversation_tokens(messages: Sequence[Message]) -> int:
    return sum(message_tokens(m) for m in messages)


@dataclass
class TokenMeter:
    """Reported usage where there is one, an estimate for what was added since."""

    _reported: int | None = None
    _reported_at: int = 0  # number of messages the report covered

    def report(self, usage: Usage, message_count: int) -> None:
        prompt = usage.input_tokens + usage.cache_read_tokens + usage.cache_write_tokens
        total = prompt + usage.output_tokens
        if total > 0:
            self._reported, self._reported_at = total, message_count

    def reset(self) -> None:
        self._reported, self._reported_at = None, 0

    def estimate(self, sent: RequestSize, fixed_tokens: int) -> int:
        if self._reported is None or self._reported_at > sent.count:
            return fixed_tokens + sent.tokens(0)
        return self._reported + sent.tokens(self._reported_at)


class RequestSize(Protocol):
    """The estimated size of a request, message by message of the history it came from."""

    @property
    def count(self) -> int:
        """How many history messages the request was built from."""

    def tokens(self, start: int) -> int:
        """The estimate for history messages `start` onwards, as the request carries them."""


def prune_tool_outputs(messages: Sequence[Message], keep_tokens: int) -> list[Message]:
    """Stub out old tool outputs beyond `keep_tokens`, newest kept first. The results of
    the most recent assistant message are always kept whole."""
    last_assistant = max(
        (i for i, m in enumerate(messages) if isinstance(m, AssistantMessage)), default=-1
    )
    calls = _calls_by_id(messages)
    kept = 0
    pruned: list[Message] = list(messages)
    for index in range(len(messages) - 1, -1, -1):
        message = messages[index]
        if not isinstance(message, ToolResultMessage):
            continue
        size = message_tokens(message)
        if index > last_assistant or kept + size <= keep_tokens:
            kept += size
            continue
        pruned[index] = pruned_stub(message, calls.get(message.tool_call_id), size)
    return pruned


def _calls_by_id(messages: Sequence[Message]) -> dict[str, str]:
    described = {}
    for message in messages:
        if isinstance(message, AssistantMessage):
            for call in message.tool_calls:
                described[call.id] = described_call(call)
    return described


def described_call(call: ToolCall) -> str:
    return f"{call.name}({_clip(call.arguments, 120)})"


def pruned_stub(result: ToolResultMessage, call: str | None, tokens: int) -> ToolResultMessage:
    """What a request carries instead of a pruned tool output (`call` describes the call)."""
    what = call or result.name
    text = (
        f"[pruned: the output of {what}, about {tokens} tokens, was removed to save "
        "context. Call the tool again if you still need it.]"
    )
    return replace(result, content=text)


def _clip(text: str, limit: int) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 3] + "..."


@dataclass(frozen=True)
class CompactionPlan:
    task: UserMessage  # the original task, always kept verbatim
    older: list[Message]  # what the summary replaces
    recent: list[Message]  # kept verbatim
    # The last message the person wrote, when it falls in `older` (a later task of a
    # continued session): kept verbatim too, since it is what is being worked on.
    request: UserMessage | None = None


def plan_compaction(messages: Sequence[Message], recent_keep_tokens: int) -> CompactionPlan | None:
    """Where to cut: after the task, before a user or assistant message, keeping about
    `recent_keep_tokens` of the newest messages. None when there is nothing to cut."""
    if len(messages) < 3 or not isinstance(messages[0], UserMessage):
        return None
    boundaries = [
        i for i in range(2, len(messages)) if not isinstance(messages[i], ToolResultMessage)
    ]
    if not boundaries:
        return None
    tail_tokens, cut = 0, boundaries[-1]
    for index in range(len(messages) - 1, 0, -1):
        tail_tokens += message_tokens(messages[index])
        if tail_tokens > recent_keep_tokens:
            break
        if index in boundaries:
            cut = index
    older = list(messages[1:cut])
    written = [m for m in older if isinstance(m, UserMessage) and m.origin == "user"]
    return CompactionPlan(
        task=messages[0],
        older=older,
        recent=list(messages[cut:]),
        request=written[-1] if written else None,
    )


def compacted_history(
    plan: CompactionPlan,
    summary: str,
    heading: str = "[Summary of the earlier part]",
    kept: Sequence[str] = (),
    request_heading: str = "[The latest request, word for word]",
) -> list[Message]:
    """The task, then `kept` (texts that must survive word for word: instructions read
    mid-run) unless the task or the recent part still holds them, then the summary, then
    the person's latest request when the summary replaced it. A task an earlier
    compaction opened with loses that summary, which the new one covers (the summariser
    read it), and keeps its request unless a newer one came."""
    task, _, request = compaction_parts(plan.task.content, heading, request_heading)
    if plan.request is not None:
        request = plan.request.content
    elif any(isinstance(m, UserMessage) and m.origin == "user" for m in plan.recent):
        request = None  # a newer one is there, word for word
    recent = [m.content for m in plan.recent if not isinstance(m, AssistantMessage)]
    carried = [t for t in kept if t not in task and not any(t in c for c in recent)]
    parts = [task, *carried, f"{heading}\n{summary.strip()}"]
    if request is not None:
        parts.append(f"{request_heading}\n{request}")
    return [UserMessage(content="\n\n".join(parts)), *plan.recent]


def compaction_parts(
    opening: str, heading: str, request_heading: str
) -> tuple[str, str | None, str | None]:
    """A history's opening message as a compaction wrote it: what it held before (the
    task, with the texts kept word for word), the summary, and the request it carried;
    the opening itself, None, None when no compaction did."""
    task, compacted, rest = opening.partition(f"\n\n{heading}\n")
    if not compacted:
        return opening, None, None
    summary, _, request = rest.partition(f"\n\n{request_heading}\n")
    return task, summary, request or None


def request_messages(messages: Sequence[Message]) -> list[Message]:
    """The history shaped for any provider: consecutive user messages merged into one."""
    shaped: list[Message] = []
    for message in messages:
        previous = shaped[-1] if shaped else None
        if isinstance(message, UserMessage) and isinstance(previous, UserMessage):
            shaped[-1] = UserMessage(content=f"{previous.content}\n\n{message.content}")
        else:
            shaped.append(message)
    return shaped


def unanswered_calls(messages: Sequence[Message]) -> list[ToolCall]:
    """The calls of the last assistant message that no result answers yet (a run cut
    while tools ran leaves them): each needs a result before the conversation can be
    sent again."""
    for index in range(len(messages) - 1, -1, -1):
        message = messages[index]
        if isinstance(message, AssistantMessage):
            later = messages[index + 1 :]
            answered = {m.tool_call_id for m in later if isinstance(m, ToolResultMessage)}
            return [call for call in message.tool_calls if call.id not in answered]
    return []


def request_problems(messages: Sequence[Message]) -> list[str]:
    """Why a request would be refused by a strict API (empty when it is valid)."""
    problems: list[str] = []
    if not messages or not isinstance(messages[0], UserMessage):
        problems.append("the first message must be from the user")
    pending: list[str] = []
    previous: Message | None = None
    for index, message in enumerate(messages):
        match message:
            case ToolResultMessage(tool_call_id=call_id):
                if call_id not in pending:
                    problems.append(f"message {index}: result {call_id} answers no open call")
                else:
                    pending.remove(call_id)
            case AssistantMessage() | UserMessage():
                if pending:
                    problems.append(f"message {index}: calls {pending} have no result")
                    pending = []
                if type(message) is type(previous):
                    problems.append(f"message {index}: two {message.role} messages in a row")
                if isinstance(message, AssistantMessage):
                    pending = [c.id for c in message.tool_calls]
        previous = message
    if pending:
        problems.append(f"the last calls {pending} have no result")
    return problems
