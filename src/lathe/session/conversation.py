"""From a branch of entries to a conversation a provider accepts. Pure functions.

Order of operations on resume: take the branch (root → leaf), apply the latest
compaction, put each call's results right after it, then repair tool calls a crash left
without results.
"""

from __future__ import annotations

from collections.abc import Sequence

from lathe.session.entries import CompactionEntry, Entry, MessageEntry
from lathe.types import AssistantMessage, Message, ToolResultMessage, UserMessage

INTERRUPTED_RESULT = (
    "interrupted: the run stopped before this tool finished; "
    "check the workspace state before repeating it"
)

LOST_START = (
    "[The start of this conversation was lost from its session file (a corrupt line); "
    "go on from what follows.]"
)


def branch_messages(entries: Sequence[Entry]) -> list[Message]:
    """Every message on the branch, in order, ignoring compactions: the full history."""
    return [entry.message for entry in entries if isinstance(entry, MessageEntry)]


def apply_compaction(entries: Sequence[Entry]) -> list[Message]:
    """The messages to send, given a branch (root first).

    Only the latest compaction counts: its summary was written from a context that
    already held any earlier summary. Its summary becomes one user message that replaces
    every message before `first_kept`; messages from `first_kept` on stay verbatim,
    including those appended after the compaction entry. When `first_kept` is not on the
    branch (a compaction that kept nothing), only messages after the compaction stay.
    A summary followed by a user message gives two user messages in a row; merging them
    for providers that require alternation is the context layer's job.
    """
    latest = None
    for index in range(len(entries) - 1, -1, -1):
        if isinstance(entries[index], CompactionEntry):
            latest = index
            break
    if latest is None:
        return branch_messages(entries)
    compaction = entries[latest]
    assert isinstance(compaction, CompactionEntry)
    start = next(
        (i for i, entry in enumerate(entries[:latest]) if entry.id == compaction.first_kept),
        latest + 1,
    )
    kept = branch_messages(entries[start:])
    return [UserMessage(content=compaction.summary), *kept]


def in_call_order(messages: Sequence[Message]) -> list[Message]:
    """`messages` with the results of each reply's calls moved up to right after it,
    ahead of the messages between them (up to the next reply). A result whose call is
    elsewhere stays put, for the repair of dangling calls to judge. A served session
    keeps a message queued at close after a call paused on its approval, so the call's
    result comes after that message once it runs: the repair had called the call
    interrupted and dropped its real result."""
    ordered: list[Message] = []
    index, count = 0, len(messages)
    while index < count:
        message = messages[index]
        ordered.append(message)
        index += 1
        if not isinstance(message, AssistantMessage) or not message.tool_calls:
            continue
        end = index
        while end < count and not isinstance(messages[end], AssistantMessage):
            end += 1
        calls = {call.id for call in message.tool_calls}
        results: dict[str, Message] = {}
        for later in messages[index:end]:
            if isinstance(later, ToolResultMessage) and later.tool_call_id in calls:
                results.setdefault(later.tool_call_id, later)
        taken = {id(result) for result in results.values()}
        ordered += results.values()
        ordered += (m for m in messages[index:end] if id(m) not in taken)
        index = end
    return ordered


def repair_dangling_tool_calls(
    messages: Sequence[Message],
) -> tuple[list[Message], list[ToolResultMessage]]:
    """Give every assistant tool call without a result an "interrupted" error result,
    and drop each result whose call is not in the assistant message just before it (a
    corrupt line lost that message: every provider refuses such a result).

    The synthetic results go right after the results the call's message did get, so
    each assistant message is followed by exactly one result per call. Returns the
    repaired conversation and the results that were added (empty when nothing was
    missing).
    """
    repaired: list[Message] = []
    added: list[ToolResultMessage] = []
    index = 0
    while index < len(messages):
        message = messages[index]
        index += 1
        if isinstance(message, ToolResultMessage):
            continue  # no assistant message with calls before it
        repaired.append(message)
        if not isinstance(message, AssistantMessage) or not message.tool_calls:
            continue
        called = {call.id for call in message.tool_calls}
        answered: set[str] = set()
        while index < len(messages) and isinstance(messages[index], ToolResultMessage):
            result = messages[index]
            assert isinstance(result, ToolResultMessage)
            if result.tool_call_id in called - answered:
                answered.add(result.tool_call_id)
                repaired.append(result)
            index += 1
        for call in message.tool_calls:
            if call.id not in answered:
                synthetic = ToolResultMessage(
                    tool_call_id=call.id,
                    name=call.name,
                    content=INTERRUPTED_RESULT,
                    is_error=True,
                )
                repaired.append(synthetic)
                added.append(synthetic)
    return repaired, added


def starting_with_the_user(messages: list[Message]) -> list[Message]:
    """`messages`, opened by a note saying the start was lost when a corrupt line took
    the first user message: a conversation must begin with the user's turn."""
    if not messages or isinstance(messages[0], UserMessage):
        return messages
    return [UserMessage(content=LOST_START, origin="lathe"), *messages]


def unanswered_tail_calls(messages: Sequence[Message]) -> list[ToolResultMessage]:
    """The interrupted results to append at the end of a conversation whose last
    assistant message is followed only by (some of) its results: the state a crash
    mid-tool leaves. Empty when the tail is complete or something else came after."""
    for index in range(len(messages) - 1, -1, -1):
        if isinstance(messages[index], AssistantMessage):
            _, added = repair_dangling_tool_calls(messages[index:])
            if all(isinstance(m, ToolResultMessage) for m in messages[index + 1 :]):
                return added
            return []
    return []
