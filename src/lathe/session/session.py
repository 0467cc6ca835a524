"""One open session: its entries in memory, and, when writable, the file it appends to.

Contract:
- `append` writes one JSON line with a single `write`, then `fsync`s before it returns,
  so an entry `append` returned is on disk, and a kill -9 at any moment leaves at most
  one torn last line, which the loader skips.
- Only a writable session (one holding the lock, from `SessionStore.create`, `open`,
  `latest` or `fork`) can append; a read-only one is a snapshot of the file when loaded.
- The current leaf is the entry appended last, or the one `set_leaf` chose; `append`
  attaches new entries to it, so moving the leaf back starts a new branch in the same
  file.
- `close` on a writable session that appended puts the file's summary into the listing
  index (`listing.remember`), so `sessions list` after a run need not read the file
  again; unless a write failed, when the file may hold a part line the entries lack.
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Sequence
from enum import Enum
from pathlib import Path
from types import TracebackType
from typing import TypeVar, cast

from lathe.errors import LatheError, UsageError
from lathe.session import listing, summarise
from lathe.session.conversation import (
    apply_compaction,
    branch_messages,
    in_call_order,
    repair_dangling_tool_calls,
    starting_with_the_user,
    unanswered_tail_calls,
)
from lathe.session.entries import (
    ENTRY_ADAPTER,
    BaseEntry,
    Entry,
    Header,
    MessageEntry,
    new_entry_id,
)
from lathe.session.lock import SessionLock
from lathe.session.tree import EntryTree
from lathe.types import AssistantMessage, Message, ToolResultMessage

E = TypeVar("E", bound=BaseEntry)


class _Default(Enum):
    LEAF = "leaf"


LEAF = _Default.LEAF


class SessionWriteError(LatheError):
    """An entry could not be written (a full disk): the record of the run stops here,
    so the run must too. What was written before stays, a torn last line included,
    which the next load cuts off."""


def write_durably(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        written = os.write(fd, view)
        view = view[written:]
    os.fsync(fd)


class Session:
    def __init__(
        self,
        path: Path,
        header: Header,
        tree: EntryTree,
        warnings: list[str] | None = None,
        lock: SessionLock | None = None,
    ) -> None:
        self.path = path
        self.header = header
        self.warnings: list[str] = warnings or []
        self._tree = tree
        self._leaf: str | None = tree.entries[-1].id if tree.entries else None
        self._lock = lock
        self._fd: int | None = None
        self._appended = False
        self._write_failed = False
        if lock is not None:
            self._fd = os.open(path, os.O_WRONLY | os.O_APPEND)

    @property
    def id(self) -> str:
        return self.header.id

    @property
    def entries(self) -> Sequence[Entry]:
        """Every entry in file order, all branches."""
        return self._tree.entries

    @property
    def leaf(self) -> str | None:
        return self._leaf

    @property
    def writable(self) -> bool:
        return self._fd is not None

    def get(self, entry_id: str) -> Entry:
        return self._tree.by_id[entry_id]

    def resolve(self, prefix: str) -> str:
        """The id of the one entry whose id starts with `prefix`."""
        if prefix in self._tree.by_id:
            return prefix
        matches = [entry_id for entry_id in self._tree.by_id if entry_id.startswith(prefix)]
        if len(matches) == 1:
            return matches[0]
        if not matches:
            raise UsageError(
                f"session {self.id} has no entry starting with {prefix!r}; "
                f"`lathe sessions show {self.id}` lists entry ids"
            )
        raise UsageError(
            f"entry prefix {prefix!r} is ambiguous in session {self.id}: it matches "
            f"{', '.join(sorted(matches))}; give more characters"
        )

    def set_leaf(self, entry_id: str | None) -> None:
        """Move the leaf (an id or prefix; None for before the first entry)."""
        self._leaf = None if entry_id is None else self.resolve(entry_id)

    def append(self, entry: E, *, parent: str | _Default | None = LEAF) -> E:
        """Write `entry` attached to `parent` (default: the current leaf) and make it
        the leaf. Fills in a fresh id unless the entry already has one; returns the
        entry as stored."""
        if self._fd is None:
            raise RuntimeError(f"session {self.id} was opened read-only")
        parent_id = self._leaf if parent is LEAF else parent
        if parent_id is not None and parent_id not in self._tree.by_id:
            raise ValueError(f"parent {parent_id} is not an entry of session {self.id}")
        entry_id = entry.id
        if entry_id in self._tree.by_id:
            raise ValueError(f"entry id {entry_id} already exists in session {self.id}")
        while not entry_id or entry_id in self._tree.by_id:
            entry_id = new_entry_id()
        stored = dataclasses.replace(entry, id=entry_id, parent=parent_id)
        # E is one of Entry's members; mypy cannot see through the Annotated union.
        as_entry = cast("Entry", stored)
        try:
            write_durably(self._fd, ENTRY_ADAPTER.dump_json(as_entry) + b"\n")
        except OSError as exc:  # a full disk, a file size limit: the run cannot go on
            self._write_failed = True
            raise SessionWriteError(
                f"could not write the session {self.path}: {exc.strerror or exc}; free "
                "space, then resume with `lathe run --continue`"
            ) from exc
        except BaseException:
            self._write_failed = True
            raise
        self._appended = True
        self._tree.add(as_entry)
        self._leaf = entry_id
        return stored

    def append_message(self, message: Message) -> MessageEntry:
        return self.append(MessageEntry(message=message))

    def branch(self, leaf: str | None = None) -> list[Entry]:
        """The entries from the root to `leaf` (an id or prefix; default the current
        leaf), in order."""
        return self._tree.branch(self._leaf if leaf is None else self.resolve(leaf))

    def messages(self, leaf: str | None = None) -> list[Message]:
        """The full message history of the branch ending at `leaf`, compactions ignored."""
        return branch_messages(self.branch(leaf))

    def conversation(self, leaf: str | None = None, *, open_tail: bool = False) -> list[Message]:
        """What to send to the model: the latest compaction applied, each call's
        results right after it (`in_call_order`), any tool call left without a result
        given an "interrupted" result, and what a corrupt line left unsendable mended (a
        result whose call was lost, a lost first message). `open_tail`: the calls of the
        last reply stay without results (a served session's approval waits for one, or
        the caller answers them)."""
        ordered = in_call_order(apply_compaction(self.branch(leaf)))
        last = len(ordered)
        if open_tail:
            last = max(
                (i for i, m in enumerate(ordered) if isinstance(m, AssistantMessage)), default=0
            )
        repaired, _ = repair_dangling_tool_calls(ordered[:last])
        return starting_with_the_user([*repaired, *ordered[last:]])

    def close_dangling_tool_calls(self) -> list[ToolResultMessage]:
        """After a crash mid-tool: append an "interrupted" result for each call of the
        last assistant message that has none, so the file itself is whole again.
        Call once on resume, before the next model request."""
        added = unanswered_tail_calls(self.messages())
        for result in added:
            self.append_message(result)
        return added

    def close(self) -> None:
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None
            # Still under the lock: nobody else can have appended since the last entry.
            self._remember_summary()
        if self._lock is not None:
            self._lock.release()
            self._lock = None

    def check_workspace(self, workspace: Path) -> None:
        """A session goes on in the workspace it was started in: resumed elsewhere, its
        conversation would speak of files that are not there, and `--continue` in its own
        workspace would pick up work done in another. A UsageError naming the `-C` that
        resumes it, unless its own workspace no longer exists (a repository moved)."""
        own = Path(self.header.cwd)
        if own == workspace.resolve() or not own.is_dir():
            return
        raise UsageError(
            f"session {self.id} belongs to {own}, not {workspace.resolve()}; resume it "
            f"from there (-C {own})"
        )

    def close_or_discard(self) -> None:
        """Close; a session that never got an entry is removed with its lock, so a run
        stopped before it began (an empty task, a bad rule) or an interactive session left
        at once leaves nothing for the listing or `--continue` to find."""
        empty = not self.entries
        self.close()
        if empty:
            for path in (self.path, self.path.with_suffix(".lock")):
                path.unlink(missing_ok=True)

    def _remember_summary(self) -> None:
        if not self._appended or self._write_failed:
            return
        fields = summarise.of_entries(self.header, self._tree.entries)
        # A load that warned (a corrupt middle line, a converted format) reloads with
        # warnings too; such a file is reparsed whole when it grows, as the listing does.
        listing.remember(self.path, fields, growable=not self.warnings)

    def __enter__(self) -> Session:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()
