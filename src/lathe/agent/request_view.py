"""The request-shaped view of a growing conversation, kept up to date turn by turn.

Every request carries the whole history, pruned (`context.prune_tool_outputs`) and
shaped (`context.request_messages`). Computed from scratch, that pass revisits every
message each turn and a long run pays for its length on every turn; this view pays
only for what was added since the last request, plus the few older tool outputs whose
pruning the new ones change. The request comes as `Chunks` (`lathe.chunked`) of up to
`CHUNK` messages, each chunk the same object from one request to the next while none of
its messages changes, so the stages after this one (masking, the provider's wire form)
redo only the chunks that changed.
"""

from __future__ import annotations

import sys
from bisect import bisect_left, bisect_right
from collections.abc import Sequence

from lathe.agent.context import described_call, message_tokens, pruned_stub
from lathe.chunked import Chunks
from lathe.types import AssistantMessage, Message, ToolResultMessage, UserMessage

# Messages in a chunk of the request: a changed chunk costs each later stage this many
# lookups (its unchanged messages are not converted again), the request one per chunk.
CHUNK = 64


class RequestView:
    """`update(history, keep_tokens)` returns `Chunks` equal to
    `request_messages(prune_tool_outputs(history, keep_tokens))` (no pruning when
    `keep_tokens` is None).

    Between calls the history may grow at its end. Any other change — a compaction
    replacing it, a resumed session adopted in place — is noticed by the identity of the
    first and last message seen, and the view is rebuilt; `reset()` forces that after a
    rewrite it could not notice. Messages that did not change keep their identity from
    one request to the next, and so do chunks none of whose messages changed, so a
    provider can reuse what it converted.
    """

    def __init__(self, chunk: int = CHUNK) -> None:
        self._chunk = chunk
        self.reset()

    def reset(self) -> None:
        self._seen: tuple[Message, Message] | None = None  # the first and last seen
        self._count = 0
        self._shaped: list[Message] = []
        self._chunks: list[tuple[Message, ...]] = []  # of `_shaped`, `_chunk` slots each
        self._dirty: set[int] = set()  # chunks whose slots changed since the last update
        self._sent_tokens: list[int] = []  # per history message, as sent (stub if pruned)
        self._sent_total = 0
        self._calls: dict[str, str] = {}
        self._last_assistant = -1
        # One entry per tool result, oldest first.
        self._results: list[ToolResultMessage] = []
        self._result_at: list[int] = []  # index in the history
        self._result_slot: list[int] = []  # index in the shaped list
        self._result_tokens: list[int] = []
        self._smallest_up_to: list[int] = []  # smallest result so far, for an early stop
        self._stubs: list[ToolResultMessage | None] = []
        self._pruned: list[bool] = []
        self._prefix = [0]  # _prefix[i]: the tokens of the results before the i-th
        self._run_start = 0  # from this result on, all were kept at the last update
        self._kept_below: list[int] = []  # the results kept before `_run_start`

    def update(self, history: Sequence[Message], keep_tokens: int | None) -> Chunks[Message]:
        if not self._extends(history):
            self.reset()
        for index in range(self._count, len(history)):
            self._add(index, history[index])
        self._count = len(history)
        if history:
            self._seen = (history[0], history[-1])
        self._prune(sys.maxsize if keep_tokens is None else keep_tokens)
        for index in sorted(self._dirty):  # in order: a new chunk is appended
            size = self._chunk
            chunk = tuple(self._shaped[index * size : (index + 1) * size])
            if index < len(self._chunks):
                self._chunks[index] = chunk
            else:
                self._chunks.append(chunk)
        self._dirty.clear()
        return Chunks(self._chunks)

    @property
    def count(self) -> int:
        return self._count

    def tokens(self, start: int) -> int:
        """The estimated size of what the last `update` sends, from history index `start`
        (`context.RequestSize`)."""
        if start <= 0:
            return self._sent_total
        return sum(self._sent_tokens[start:])  # the few messages since the last usage

    def _extends(self, history: Sequence[Message]) -> bool:
        if self._seen is None:
            return True
        first, last = self._seen
        return (
            len(history) >= self._count and history[0] is first and history[self._count - 1] is last
        )

    def _add(self, index: int, message: Message) -> None:
        tokens = message_tokens(message)
        self._sent_tokens.append(tokens)
        self._sent_total += tokens
        if isinstance(message, UserMessage) and self._shaped:
            previous = self._shaped[-1]
            if isinstance(previous, UserMessage):
                merged = f"{previous.content}\n\n{message.content}"
                self._shaped[-1] = UserMessage(content=merged)
                self._dirty.add((len(self._shaped) - 1) // self._chunk)
                return
        if isinstance(message, AssistantMessage):
            self._last_assistant = index
            for call in message.tool_calls:
                self._calls[call.id] = described_call(call)
        elif isinstance(message, ToolResultMessage):
            smallest = min(tokens, self._smallest_up_to[-1]) if self._results else tokens
            self._results.append(message)
            self._result_at.append(index)
            self._result_slot.append(len(self._shaped))
            self._result_tokens.append(tokens)
            self._smallest_up_to.append(smallest)
            self._stubs.append(None)
            self._pruned.append(False)
            self._prefix.append(self._prefix[-1] + tokens)
        self._dirty.add(len(self._shaped) // self._chunk)
        self._shaped.append(message)

    def _prune(self, keep_tokens: int) -> None:
        """The rule of `prune_tool_outputs`, newest first (a result is kept whole when it
        belongs to the last reply or still fits the budget), worked out from what changed.

        Newest first, the results fit one after the other up to the first that does not,
        the boundary: found by bisecting the running totals. Older than it, a result is
        kept only if it fits the room left, and the walk stops where no older result could
        (`_smallest_up_to`). Only the results whose state can have changed are set: those
        the boundary moved over, the walked ones, and those kept below it last time."""
        count = len(self._results)
        last_reply = bisect_right(self._result_at, self._last_assistant)
        over = self._prefix[count] - keep_tokens  # how far the whole exceeds the budget
        boundary = min(bisect_left(self._prefix, over), last_reply) - 1 if over > 0 else -1
        kept_below: list[int] = []
        stop = 0  # every result before it is pruned
        if boundary >= 0:
            room = keep_tokens - (self._prefix[count] - self._prefix[boundary + 1])
            index = boundary - 1
            while index >= 0 and room >= self._smallest_up_to[index]:
                if self._result_tokens[index] <= room:
                    room -= self._result_tokens[index]
                    kept_below.append(index)
                index -= 1
            stop = index + 1
        for index in range(boundary + 1, self._run_start):
            self._set_pruned(index, False)
        walked_kept = set(kept_below)
        for index in range(stop, boundary + 1):
            self._set_pruned(index, index not in walked_kept)
        for index in range(self._run_start, stop):
            self._set_pruned(index, True)
        for index in self._kept_below:
            if index < stop:
                self._set_pruned(index, True)
        self._run_start, self._kept_below = boundary + 1, kept_below

    def _set_pruned(self, index: int, pruned: bool) -> None:
        if self._pruned[index] == pruned:
            return
        self._pruned[index] = pruned
        result = self._results[index]
        self._dirty.add(self._result_slot[index] // self._chunk)
        if pruned:
            stub = self._stubs[index]
            if stub is None:
                what = self._calls.get(result.tool_call_id)
                stub = pruned_stub(result, what, self._result_tokens[index])
                self._stubs[index] = stub
            self._shaped[self._result_slot[index]] = stub
            self._set_sent_tokens(self._result_at[index], message_tokens(stub))
        else:
            self._shaped[self._result_slot[index]] = result
            self._set_sent_tokens(self._result_at[index], self._result_tokens[index])

    def _set_sent_tokens(self, index: int, tokens: int) -> None:
        self._sent_total += tokens - self._sent_tokens[index]
        self._sent_tokens[index] = tokens
