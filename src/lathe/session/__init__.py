"""The session store: append-only JSONL trees that survive crashes, resume and fork.

A run records into a locked session::

    store = SessionStore(lathe_home())
    with store.create(workspace, model) as session:
        session.append_message(UserMessage(content=task))
        ...  # every assistant reply and tool result, as it happens
        session.append(RunEndEntry(status="verified", turns=3, usage=usage))

`--continue` is `store.latest(workspace)` (None when the workspace has none) and
`--resume ID` is `store.open(ID)`; then `session.close_dangling_tool_calls()` and
`session.conversation()` give the messages to send next.
"""

import importlib
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from lathe.session.conversation import (
        INTERRUPTED_RESULT,
        apply_compaction,
        repair_dangling_tool_calls,
    )
    from lathe.session.entries import (
        ENTRY_ADAPTER,
        FORMAT_VERSION,
        ApprovalAnswerEntry,
        ApprovalEntry,
        ApprovalRequestEntry,
        BaseEntry,
        CheckpointEntry,
        CompactionEntry,
        Entry,
        Header,
        LabelEntry,
        MessageEntry,
        ModelChangeEntry,
        RunEndEntry,
    )
    from lathe.session.listing import SessionSummary
    from lathe.session.session import Session
    from lathe.session.store import SessionStore

__all__ = [
    "ENTRY_ADAPTER",
    "FORMAT_VERSION",
    "INTERRUPTED_RESULT",
    "ApprovalAnswerEntry",
    "ApprovalEntry",
    "ApprovalRequestEntry",
    "BaseEntry",
    "CheckpointEntry",
    "CompactionEntry",
    "Entry",
    "Header",
    "LabelEntry",
    "MessageEntry",
    "ModelChangeEntry",
    "RunEndEntry",
    "Session",
    "SessionStore",
    "SessionSummary",
    "apply_compaction",
    "repair_dangling_tool_calls",
]

# Each name is imported from its module on first use, so that `lathe.session.listing`
# (what `sessions list` needs when the index answers) loads without the entry models.
_MODULE_OF = {
    "INTERRUPTED_RESULT": "conversation",
    "apply_compaction": "conversation",
    "repair_dangling_tool_calls": "conversation",
    "SessionSummary": "listing",
    "Session": "session",
    "SessionStore": "store",
}


def __getattr__(name: str) -> object:
    if name not in __all__:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    module = importlib.import_module(f"{__name__}.{_MODULE_OF.get(name, 'entries')}")
    value = getattr(module, name)
    globals()[name] = value
    return value
