"""Values the checkpoint store hands out: checkpoints, file changes, restore reports."""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from functools import cached_property
from typing import Literal

from lathe.checkpoint.shadow import LogRecord

FileStatus = Literal["added", "modified", "deleted"]

# Checkpoints that are the result of something lathe did to the workspace: an agent turn
# ("after"), a restore, an undo, a run's reset between its attempts, a check the verify
# gate ran ("check": what the code under test wrote when it ran, a report). The first two
# are what `undo` reverts, newest first; a reset is part of the run, whose failed
# attempts it discarded; a check is no change anyone asked for, but what it wrote is
# lathe's, not the user's, when a run starts over.
UNDOABLE_KINDS = frozenset({"after", "restore"})
LATHE_KINDS = UNDOABLE_KINDS | {"undo", "reset", "check"}

_STATUS = {"A": "added", "D": "deleted"}


@dataclass(frozen=True)
class FileChange:
    status: FileStatus
    path: str


_MODES_KEPT = 1000  # files a checkpoint names with their own bits, at most


@dataclass(frozen=True)
class Modes:
    """The permission bits of a checkpoint's regular files, which git does not keep (a
    tree knows only whether a file is executable): those most of its plain files have,
    those most of its executable ones have, and each file that has other bits.

    Past `_MODES_KEPT` such files, the common bits are those every file of its kind has
    (the narrowest), so that a file not named comes back no wider than it was."""

    regular: int = 0o644
    executable: int = 0o755
    files: tuple[tuple[str, int], ...] = ()

    @classmethod
    def of_files(cls, found: Mapping[str, tuple[bool, int]]) -> Modes:
        """From each file's (executable, bits), as `ShadowRepo.file_modes` reads them."""
        common = []
        for executable in (False, True):
            bits = Counter(b for x, b in found.values() if x == executable)
            common.append(bits.most_common(1)[0][0] if bits else (0o755 if executable else 0o644))
        others = {p: b for p, (x, b) in found.items() if b != common[x]}
        if len(others) > _MODES_KEPT:
            for x, b in found.values():
                common[x] &= b
            others = {p: b for p, (x, b) in found.items() if b != common[x]}
        kept = sorted(others.items())[:_MODES_KEPT]
        return cls(regular=common[False], executable=common[True], files=tuple(kept))

    @cached_property
    def _by_path(self) -> dict[str, int]:
        return dict(self.files)

    def of(self, path: str, executable: bool) -> int:
        """The bits the file at `path` had (executable or not, as its tree says)."""
        found = self._by_path.get(path)
        if found is not None:
            return found
        return self.executable if executable else self.regular

    def trailer(self) -> str:
        """These modes as a `Lathe-Modes` trailer's value (`checkpoint_from` reads it):
        ASCII JSON, as the folders' trailer, so that any file name survives."""
        return json.dumps(
            {
                "regular": f"{self.regular:o}",
                "executable": f"{self.executable:o}",
                "files": {path: f"{bits:o}" for path, bits in self.files},
            }
        )


@dataclass(frozen=True)
class Checkpoint:
    """One recorded state of the workspace.

    `n` is its number in the workspace, in order of creation: 1 for the first checkpoint
    ever recorded there, counting up; never reused, never renumbered (an undo or a
    restore adds checkpoints, it removes none). `files` are the changes from the previous
    checkpoint; empty for the first one (`parent` is None).
    An undo's checkpoint names the checkpoint it reverted (`undoes`), how many files it
    `kept` because the user had changed them and how many it `failed` to change (a
    plain undo then finishes it); a reset's, the checkpoint it brought the
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
    failed: int = 0
    modes: Modes | None = None
    """Its files' permission bits, which a restore gives back; None in a checkpoint an
    older lathe recorded."""

    @property
    def by_lathe(self) -> bool:
        return self.kind in LATHE_KINDS


@dataclass
class RestoreReport:
    """What an undo or restore did. Paths are relative to the workspace, POSIX style.

    `restored` were reverted in place, `recreated` had been deleted and are back,
    `deleted` did not exist at the target and are gone; `modes` had the target's content
    but other permission bits (a chmod, which no git tree shows), set back to the target's.
    `kept` were changed by the user
    since lathe last wrote them and were left alone; `forced` are such files
    that were overwritten because force was asked. `skipped` are left alone, force or not,
    because checkpoints do not hold their current contents: nested git repositories, and
    ignored files standing where a recorded file would be written back. `held` are such
    files that the result records, no longer ignored (the restore put back the rules
    that had ignored them): never overwritten, as they were never backed up, but
    restoring the target again brings its content back, theirs recorded first. `failed` are
    those that could not be deleted or written when tried (an append-only file, a full
    disk), each with why: the store records the result, then raises a `LatheError`
    naming them, so a report handed out holds none; what can be seen beforehand (a
    folder that may not be written, an immutable file) stops the restore before it
    changes anything, with a `UsageError`. `backup` is the
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
    modes: list[str] = field(default_factory=list)
    kept: list[str] = field(default_factory=list)
    forced: list[str] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)
    held: list[str] = field(default_factory=list)
    failed: dict[str, str] = field(default_factory=dict)
    cut_short: bool = False
    undid: Checkpoint | None = None  # for an undo: the operation it reverted

    @property
    def changed(self) -> bool:
        return bool(self.restored or self.recreated or self.deleted or self.modes)


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
    trailers = {
        key: value
        for key, colon, value in (line.partition(": ") for line in body.splitlines())
        if colon and key.startswith("Lathe-")
    }
    turn = trailers.get("Lathe-Turn")
    kept = trailers.get("Lathe-Kept", "0")
    failed = trailers.get("Lathe-Failed", "0")
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
        failed=int(failed) if failed.isdigit() else 0,
        folders=_folders(trailers.get("Lathe-Folders")),
        modes=_modes(trailers.get("Lathe-Modes")),
    )


def _folders(trailer: str | None) -> tuple[str, ...]:
    if not trailer:
        return ()
    try:
        names = json.loads(trailer)
    except ValueError:
        return ()
    return tuple(n for n in names if isinstance(n, str)) if isinstance(names, list) else ()


def _modes(trailer: str | None) -> Modes | None:
    if not trailer:
        return None
    try:
        read = json.loads(trailer)
        files = tuple((str(p), _bits(b)) for p, b in read["files"].items())
        return Modes(_bits(read["regular"]), _bits(read["executable"]), files)
    except (ValueError, KeyError, TypeError, AttributeError):
        return None


def _bits(octal: object) -> int:
    if not isinstance(octal, str):
        raise TypeError(octal)
    return int(octal, 8) & 0o777
