"""Sessions rendered for people (plain text, markdown) and programs (JSON). Pure
functions returning strings; the CLI decides where they go.


A user message with `origin="lathe"` (the baseline check, verify feedback, a nudge) is
lathe's note to the model, not the person's turn: it is shown as lathe's, abbreviated
like a tool result; JSON keeps the `origin` field as recorded.

A checkpoint entry is named by its number in the workspace (`#7`, as `lathe checkpoints
list` shows it) when the caller passes the numbers, else by its commit."""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import assert_never

from lathe.plural import plural
from lathe.session.entries import (
    ENTRY_ADAPTER,
    ApprovalAnswerEntry,
    ApprovalEntry,
    ApprovalRequestEntry,
    CheckpointEntry,
    CompactionEntry,
    Entry,
    LabelEntry,
    MessageEntry,
    ModelChangeEntry,
    RunEndEntry,
)
from lathe.session.session import Session
from lathe.types import AssistantMessage, Message, ToolCall, ToolResultMessage, UserMessage

# The argument that says what a built-in tool call does, in order of preference.
_KEY_ARGUMENTS = ("command", "path", "pattern", "file_path", "query", "url", "prompt")


def _clip(text: str, width: int) -> str:
    text = " ".join(text.split())
    return text if len(text) <= width else text[: width - 1] + "…"


def call_summary(call: ToolCall, width: int = 100) -> str:
    """`name(key argument)`, e.g. `bash(pytest -q)`; the first string argument for
    tools without a known key argument."""
    arguments = call.parsed_arguments()
    key = next((name for name in _KEY_ARGUMENTS if isinstance(arguments.get(name), str)), None)
    if key is None:
        key = next((name for name, value in arguments.items() if isinstance(value, str)), None)
    shown = str(arguments[key]) if key is not None else ""
    return f"{call.name}({_clip(shown, width)})"


def _abbreviate(text: str, lines: int = 6) -> str:
    kept = text.splitlines()
    if len(kept) <= lines:
        return text.rstrip("\n")
    return "\n".join([*kept[:lines], f"… ({plural(len(kept) - lines, 'more line')})"])


def _indent(text: str, prefix: str = "    ") -> str:
    return "\n".join(prefix + line for line in text.splitlines()) or prefix.rstrip()


def _event_line(entry: Entry, checkpoints: Mapping[str, int]) -> str | None:
    """One bracketed line for an entry that is not a message; None for messages."""
    match entry:
        case MessageEntry():
            return None
        case CompactionEntry():
            return (
                f"[compaction: {entry.tokens_before} → {entry.tokens_after} tokens, "
                f"kept from {entry.first_kept}]"
            )
        case CheckpointEntry():
            # The recorder writes the state after the turn's changes.
            n = checkpoints.get(entry.ref)
            name = entry.ref[:12] if n is None else f"#{n}"
            return f"[checkpoint {name} after turn {entry.turn}]"
        case ModelChangeEntry():
            return f"[model → {entry.provider}/{entry.model}]"
        case LabelEntry():
            return f"[label: {entry.text}]"
        case ApprovalEntry():
            decision = "revoked" if entry.decision == "revoke" else entry.decision
            return f"[approval: {entry.rule} → {decision}]"
        case ApprovalRequestEntry():
            return f"[approval asked {entry.approval_id}: {entry.key} ({entry.reason})]"
        case ApprovalAnswerEntry():
            by = " (nobody answered in time)" if entry.by == "timeout" else ""
            return f"[approval {entry.approval_id} → {entry.choice}{by}]"
        case RunEndEntry():
            reason = f": {entry.reason}" if entry.reason else ""
            return (
                f"[run ended {entry.status} after {plural(entry.turns, 'turn')}, "
                f"{plural(entry.usage.total, 'token')}{reason}]"
            )
        case _:
            assert_never(entry)


@dataclass(frozen=True, slots=True)
class Block:
    """One block of a transcript, for a program that draws it (the web page) and must not
    parse the text, where a message's own line can look like a header.

    `kind` is user, lathe, assistant, tool or event (any entry that is not a message).
    `head` is a tool result's tool name, with " error" when it failed, or an event's
    bracketed line; `text` is as the text transcript shows it, lathe's notes and tool
    results abbreviated and an assistant's calls summarised one per line."""

    kind: str
    head: str
    text: str
    entry_id: str


def _message_block(message: Message, entry_id: str) -> Block:
    match message:
        case UserMessage(origin="lathe"):
            return Block("lathe", "", _abbreviate(message.content), entry_id)
        case UserMessage():
            return Block("user", "", message.content.rstrip(), entry_id)
        case AssistantMessage():
            lines = [message.text.rstrip()] if message.text.strip() else []
            lines.extend(f"  → {call_summary(call)}" for call in message.tool_calls)
            return Block("assistant", "", "\n".join(lines), entry_id)
        case ToolResultMessage():
            status = " error" if message.is_error else ""
            return Block("tool", f"{message.name}{status}", _abbreviate(message.content), entry_id)
        case _:
            assert_never(message)


def _block_text(block: Block) -> str:
    match block.kind:
        case "event":
            return block.head
        case "user":
            return f"── user ({block.entry_id})\n{block.text}"
        case "lathe":
            return f"── lathe ({block.entry_id})\n{_indent(block.text)}"
        case "assistant":
            body = f"\n{block.text}" if block.text else ""
            return f"── assistant ({block.entry_id}){body}"
        case _:
            return f"  ← {block.head} ({block.entry_id})\n{_indent(block.text)}"


def _title(session: Session) -> str:
    header = session.header
    forked = (
        f"\nforked from {header.parent_session} at {header.parent_entry}"
        if header.parent_session
        else ""
    )
    return (
        f"session {header.id} · {header.model} · {header.created:%Y-%m-%d %H:%M} UTC\n"
        f"cwd {header.cwd}{forked}"
    )


def render_text(
    session: Session, leaf: str | None = None, checkpoints: Mapping[str, int] | None = None
) -> str:
    """The current branch as a readable transcript, tool results abbreviated;
    `checkpoints` maps a checkpoint's commit to its number."""
    return text_of(session, transcript_blocks(session, leaf, checkpoints))


def text_of(session: Session, blocks: Iterable[Block]) -> str:
    """The text transcript of `blocks` (`transcript_blocks`), under the session's title."""
    return "\n\n".join([_title(session), *map(_block_text, blocks)]) + "\n"


def transcript_blocks(
    session: Session, leaf: str | None = None, checkpoints: Mapping[str, int] | None = None
) -> Iterator[Block]:
    """The blocks `render_text` shows after its title, in order."""
    for entry in _shown(session, leaf):
        line = _event_line(entry, checkpoints or {})
        if line is not None:
            yield Block("event", line, "", entry.id)
        else:
            assert isinstance(entry, MessageEntry)
            yield _message_block(entry.message, entry.id)


def _shown(session: Session, leaf: str | None) -> Iterator[Entry]:
    """The branch's entries a transcript shows: a model change only where the model
    changes (a run records its settings in one each time they change, on the same model:
    every transcript had begun with the model its header names)."""
    model = session.header.model
    for entry in session.branch(leaf):
        if isinstance(entry, ModelChangeEntry):
            if entry.model == model:
                continue
            model = entry.model
        yield entry


def _fence(text: str) -> str:
    runs = (line.strip() for line in text.split("\n"))
    longest = max((len(run) for run in runs if set(run) == {"`"}), default=0)
    ticks = "`" * max(3, longest + 1)
    return f"{ticks}\n{text.rstrip()}\n{ticks}"


def _message_markdown(message: Message) -> str:
    match message:
        case UserMessage(origin="lathe"):
            return f"### Note from lathe\n\n{_fence(message.content)}"
        case UserMessage():
            return f"## User\n\n{message.content.rstrip()}"
        case AssistantMessage():
            parts = ["## Assistant"]
            if message.text.strip():
                parts.append(message.text.rstrip())
            parts.extend(
                f"**{call.name}**\n\n{_fence(call.arguments)}" for call in message.tool_calls
            )
            return "\n\n".join(parts)
        case ToolResultMessage():
            status = " (error)" if message.is_error else ""
            return f"### Result: {message.name}{status}\n\n{_fence(message.content)}"
        case _:
            assert_never(message)


def render_markdown(
    session: Session, leaf: str | None = None, checkpoints: Mapping[str, int] | None = None
) -> str:
    """The current branch as markdown, tool arguments and results in full; `checkpoints`
    as for `render_text`."""
    header = session.header
    blocks = [
        f"# Session {header.id}",
        f"- model: {header.model}\n- cwd: `{header.cwd}`\n- created: {header.created.isoformat()}",
    ]
    for entry in _shown(session, leaf):
        if isinstance(entry, MessageEntry):
            blocks.append(_message_markdown(entry.message))
        else:
            blocks.append(f"*{_event_line(entry, checkpoints or {})}*")
    return "\n\n".join(blocks) + "\n"


def export_json(session: Session, entries: Sequence[Entry] | None = None) -> str:
    """`{"header": …, "entries": […]}` with every entry of the file (all branches) in
    file order, or the given ones; `parent` links rebuild the tree."""
    chosen = session.entries if entries is None else entries
    document = {
        "header": session.header.model_dump(mode="json"),
        "entries": [ENTRY_ADAPTER.dump_python(entry, mode="json") for entry in chosen],
    }
    return json.dumps(document, indent=2, ensure_ascii=False) + "\n"
