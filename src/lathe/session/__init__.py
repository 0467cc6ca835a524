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

from lathe.session.conversation import (
    INTERRUPTED_RESULT,
    apply_compaction,
    repair_dangling_tool_calls,
)
from lathe.session.entries import (
    ENTRY_ADAPTER,
    FORMAT_VERSION,
    ApprovalEntry,
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
from lathe.session.session import Session
from lathe.session.store import SessionStore, SessionSummary

__all__ = [
    "ENTRY_ADAPTER",
    "FORMAT_VERSION",
    "INTERRUPTED_RESULT",
    "ApprovalEntry",
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
