"""The conversation a served session goes on from, in an order every provider accepts.

A message queued when the server stops is kept in the session after the last reply
(`ServedSession.close`). When a call of that reply stays open for its approval, the
call's result comes after that message once the call runs, in the file as in the
agent's messages; a strict API refuses a result that does not directly follow its call
(api.openai.com: HTTP 400 "must be followed by tool messages"). So a served session puts
each call's results right after the reply that made it, ahead of the messages they came
behind: on load, and whenever it answers a call itself.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from lathe.types import AssistantMessage, Message, ToolResultMessage


def conversation(session: Any, *, open_tail: bool) -> list[Message]:
    """What to send next, from `session`'s branch: the latest compaction applied, each
    call's results right after it, and what a crash or a corrupt line left unsendable
    mended as `Session.conversation` mends it. `open_tail`: the calls of the last reply
    stay without results (an approval waits for one, or the caller answers them)."""
    from lathe.session import apply_compaction, repair_dangling_tool_calls
    from lathe.session.conversation import starting_with_the_user

    messages = in_call_order(apply_compaction(session.branch()))
    last = max((i for i, m in enumerate(messages) if isinstance(m, AssistantMessage)), default=0)
    if not open_tail:
        last = len(messages)
    repaired, _ = repair_dangling_tool_calls(messages[:last])
    return starting_with_the_user([*repaired, *messages[last:]])


def in_call_order(messages: Sequence[Message]) -> list[Message]:
    """`messages` with the results of each reply's calls moved up to right after it,
    ahead of the messages between them (up to the next reply). A result whose call is
    elsewhere stays put, for the repair of dangling calls to judge."""
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
