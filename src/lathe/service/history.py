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

from typing import Any

from lathe.types import AssistantMessage, Message


def conversation(session: Any, *, open_tail: bool) -> list[Message]:
    """What to send next, from `session`'s branch: the latest compaction applied, each
    call's results right after it, and what a crash or a corrupt line left unsendable
    mended as `Session.conversation` mends it. `open_tail`: the calls of the last reply
    stay without results (an approval waits for one, or the caller answers them)."""
    from lathe.session import apply_compaction, repair_dangling_tool_calls
    from lathe.session.conversation import in_call_order, starting_with_the_user

    messages = in_call_order(apply_compaction(session.branch()))
    last = max((i for i, m in enumerate(messages) if isinstance(m, AssistantMessage)), default=0)
    if not open_tail:
        last = len(messages)
    repaired, _ = repair_dangling_tool_calls(messages[:last])
    return starting_with_the_user([*repaired, *messages[last:]])
