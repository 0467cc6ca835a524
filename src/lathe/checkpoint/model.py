"""Values the checkpoint store hands out: checkpoints, file changes, restore reports."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Literal

from lathe.checkpoint.shadow import LogRecord

FileStatus = Literal["added", "modified", "deleted"]

# Checkpoints that are the result of something lathe did to the workspace: an agent turn
# ("after"), a restore, an undo, a run's reset between its attempts. The first two are
# what `undo` reverts, newest first; a reset is part of the run, whose failed attempts it
# discarded.
UNDOABLE_KINDS = frozenset({"after", "restore"})
LATHE_KINDS = UNDOABLE_KINDS | {"undo", "reset"}

_STATUS = {"A": "added", "D": "deleted"}


@dataclass(frozen=True)
class FileChange:
    status: FileStatus
    path: str


@dataclass(frozen=True)
class Checkpoint:
    """One recorded state of the workspace.

    `n` is its number in the workspace, in order of creation: 1 for the first checkpoint
    ever recorded there, counting up; never reused, never renumbered (an undo or a
    restore adds checkpoints, it removes none). `files` are the changes from the previous
    checkpoint; empty for the first one (`parent` is None).
    An undo's checkpoint names the checkpoint it reverted (`undoes`) and how many files
    it `kept` because the user had changed them; a reset's, the checkpoint it brought the
    workspace back to (`back_to`): what was recorded between the two, undo passes over.
    """

    n: int
    commit: str
    tree: str
    parent: str | None
    time: datetime
    label: str
    turn: int | None
    kind: str
    files: tuple[FileChange, ...]
    undoes: str | None = None
    back_to: str | None = None
    session: str | None = None
    """The session whose turn made an "after" checkpoint, when it was recorded."""
    folders: tuple[str, ...] = ()
    """Folders that held no recorded file then (empty ones): a restore keeps them."""
    kept: int = 0

    @property
    def by_lathe(self) -> bool:
        return self.kind in LATHE_KINDS


@dataclass
class RestoreReport:
    """What an undo or restore did. Paths are relative to the workspace, POSIX style.

    `restored` were reverted in place, `recreated` had been deleted and are back,
    `deleted` did not exist at the target and are gone. `kept` were changed by the user
    since lathe last wrote them and were left alone; `forced` are such files
    that were overwritten because force was asked. `skipped` are left alone, force or not,
    because checkpoints do not hold their current contents: nested git repositories, and
    ignored files standing where a recorded file would be written back. `backup` is the
    state recorded just before restoring (so the restore can be undone); `result` is the
    state after it, None when nothing needed to change. `cut_short`: the undone turn (for
    a restore, the turn that last changed some of the files kept or forced) was recorded
    after its lathe died, so every file it changed counts as the user's (kept unless
    force): edits made since the kill are in it too.
    """

    target: Checkpoint
    backup: Checkpoint
    result: Checkpoint | None = None
    restored: list[str] = field(default_factory=list)
    recreated: list[str] = field(default_factory=list)
    deleted: list[str] = field(default_factory=list)
    kept: list[str] = field(default_factory=list)
    forced: list[str] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)
    cut_short: bool = False

    @property
    def changed(self) -> bool:
        return bool(self.restored or self.recreated or self.deleted)


def encode_message(
    label: str, turn: int | None, kind: str, extra: dict[str, str] | None = None
) -> str:
    # One line of label, then trailers; control characters would break the log format.
    clean = " ".join("".join(c if c.isprintable() else " " for c in label).split())
    trailers = {"Kind": kind, **({"Turn": str(turn)} if turn is not None else {}), **(extra or {})}
    lines = "".join(f"Lathe-{key}: {value}\n" for key, value in trailers.items())
    return f"{clean or kind}\n\n{lines}"


def checkpoint_from(record: LogRecord, n: int) -> Checkpoint:
    label, _, body = record.message.partition("\n")
    trailers = dict(line.split(": ", 1) for line in body.splitlines() if line.startswith("Lathe-"))
    turn = trailers.get("Lathe-Turn")
    kept = trailers.get("Lathe-Kept", "0")
    return Checkpoint(
        n=n,
        commit=record.commit,
        tree=record.tree,
        parent=record.parent,
        time=datetime.fromtimestamp(record.timestamp, tz=UTC),
        label=label,
        turn=int(turn) if turn and turn.lstrip("-").isdigit() else None,
        kind=trailers.get("Lathe-Kind", "before"),
        files=tuple(
            FileChange(_STATUS.get(status[:1], "modified"), path)  # type: ignore[arg-type]
            for status, path in record.changes
        ),
        undoes=trailers.get("Lathe-Undoes"),
        back_to=trailers.get("Lathe-Back-To"),
        session=trailers.get("Lathe-Session"),
        kept=int(kept) if kept.isdigit() else 0,
        folders=_folders(trailers.get("Lathe-Folders")),
    )


def _folders(trailer: str | None) -> tuple[str, ...]:
    if not trailer:
        return ()
    try:
        names = json.loads(trailer)
    except ValueError:
        return ()
    return tuple(n for n in names if isinstance(n, str)) if isinstance(names, list) else ()
