"""`Checkpoints`: record workspace states between agent turns, undo and restore them.

A checkpoint is a commit in the workspace's shadow repository (see `shadow.py`) whose
tree is every non-ignored file of the workspace, and whose parent is the state just
before it. A snapshot whose tree and permission bits (`Modes`, which no tree holds)
equal the newest checkpoint's records nothing and returns that checkpoint, so the chain
holds distinct states (undo markers aside).

The loop calls `before_turn(n)` before a turn's tools run and `after_turn(n)` after
them. A `before` checkpoint appears only when something changed since lathe last looked,
i.e. the user's own edits; an `after` checkpoint only when the turn changed files. A run
that may start over records its verify checks the same way (`snapshot`, kinds "before"
and "check"), so what the code a check ran wrote counts as lathe's, not as the user's.

`undo` works like an editor's: it reverts the newest agent turn (or restore) not undone
yet, and run again goes one further back. It first records the current state (a
`before` checkpoint, the undo's `backup`), then an `undo` checkpoint naming what it
reverted; restoring the backup takes the undo back. `restore(n)` records the same
backup, then a `restore` checkpoint, which a later `undo` reverts like a turn.
`start_over` is a run's own restore between its attempts: its `reset` checkpoint is not
undone, and undo passes over it and the failed attempts it discarded.

Checkpoints are numbered in order of creation (`Checkpoint.n`, 1 = the first): the
chain only grows, so a number names one checkpoint for good, in `list()`, in a session's
transcript and in `restore(n)`.

The methods run git and block; call them between turns (from async code, through
`asyncio.to_thread`). They raise `UsageError` for what the user can fix (nothing to
undo, no checkpoint N, git missing, a file seen beforehand not to be changeable: nothing
changed) and `LatheError` when the store itself fails, or when a restore could not
change a file it tried (the rest done and recorded; the message names each file and
why). Concurrent processes on one workspace are serialised by a lock file; a ref a crash
left empty is mended at the first look (`ShadowRepo.mend_ref`).
"""

from __future__ import annotations

import builtins
import contextlib
import json
from collections.abc import Callable, Iterator
from pathlib import Path

from lathe.checkpoint.model import (
    UNDOABLE_KINDS,
    Checkpoint,
    Modes,
    RestoreReport,
    checkpoint_from,
    encode_message,
)
from lathe.checkpoint.restore import apply_restore, plan_modes, plan_restore, unchangeable
from lathe.checkpoint.shadow import Change, ShadowRepo
from lathe.errors import LatheError, UsageError
from lathe.exec.terminal import visible_name
from lathe.file_lock import FileLock
from lathe.home import private_folder, project_slug
from lathe.plural import plural, some_of

_FOLDERS_KEPT = 200  # folders a checkpoint names, at most: its message stays small
# A turn between its before and after snapshots: its number and session, and the lock
# its process holds meanwhile.
_OPEN_TURN = "open-turn.json"
_TURN_LOCK = "turn.lock"
_CUT_SHORT = " (cut short)"


def store_root(workspace: Path, home: Path) -> Path:
    return home / "checkpoints" / project_slug(workspace)


def find_workspace(start: Path, home: Path) -> Path:
    """The nearest directory at or above `start` that has checkpoints, else `start`.

    So `lathe undo` run from a subdirectory finds the workspace the agent worked in.
    """
    start = start.resolve()
    for directory in (start, *start.parents):
        if (store_root(directory, home) / "git" / "HEAD").is_file():
            return directory
    return start


class Checkpoints:
    def __init__(self, workspace: Path, home: Path) -> None:
        self.workspace = workspace.resolve()
        self.home = home
        self._repo = ShadowRepo(self.workspace, store_root(self.workspace, home), home)
        self._private = False  # its folder made 0700 (once a store, not every snapshot)
        # Checkpoints read by this process, by commit: a commit never changes, so what
        # was read of it stays true, and a snapshot between turns skips two git calls.
        self._known: dict[str, Checkpoint] = {}
        self._turn_lock: FileLock | None = None  # held while a turn of ours is open

    # -- recording ------------------------------------------------------------------

    def before_turn(self, turn: int, session_id: str | None = None) -> Checkpoint:
        """Record the state a turn starts from, and that the turn is open until
        `after_turn`: a process killed in between (kill -9, a lost machine) leaves it
        open, and the next look at the store records where the cut turn left the
        workspace as that turn's "after" (`_close_cut_turn`), so undo reverts it."""
        with self._locked(create=True):
            checkpoint = self._snapshot(f"before turn {turn}", turn=turn, kind="before")
            self._open_turn(turn, session_id)
            return checkpoint

    def after_turn(self, turn: int, session_id: str | None = None) -> Checkpoint:
        """`session_id`: the session whose turn it was, so that an undo from another
        live session can tell it is not its own."""
        with self._locked(create=True):
            label = f"after turn {turn}"
            try:
                checkpoint = self._snapshot(label, turn=turn, kind="after", session=session_id)
            except BaseException:
                # The mark stays, with no one holding it: the next look records the turn.
                self._close_turn(recorded=False)
                raise
            self._close_turn()
            return checkpoint

    def snapshot(
        self,
        label: str,
        *,
        turn: int | None = None,
        kind: str = "before",
        session: str | None = None,
    ) -> Checkpoint:
        """Record the workspace now; returns the newest checkpoint if nothing changed.

        `kind` is "before" for a state found (possibly edited by the user), "after" for
        the result of an agent turn, "restore" for the result of an undo or restore,
        "check" for what a check the verify gate ran left (recorded as lathe's, never
        undone: `start_over` puts it back).
        """
        with self._locked(create=True):
            return self._snapshot(label, turn=turn, kind=kind, session=session)

    # -- going back -----------------------------------------------------------------

    def undo(self, force: bool = False) -> RestoreReport:
        """Revert the newest agent turn (or restore) not undone yet; again goes further back.

        Only the files that operation changed (their content, or their permission bits
        alone) are touched; those the user changed since it ended are kept and reported
        unless `force`. `undo(force=True)` right after an
        undo that kept files finishes that undo instead of going further back; after one
        that kept every file and changed none, a plain undo offers the same operation
        again. An undo is taken back by restoring its `backup` checkpoint.
        """
        with self._locked(create=False):
            history = self._history()
            operation = _operation_to_undo(history, force)
            if operation is None:
                raise UsageError(
                    f"nothing to undo in {self.workspace}: no agent turn has changed files "
                    "here, or all are undone (`lathe checkpoints list` shows what is recorded)"
                    + _not_recorded(self._repo.staged_nested())
                )
            target = next(c for c in history if c.commit == operation.parent)
            what = _describe(operation)
            backup = self._snapshot(f"before undo of {what}", kind="before")
            scope = {c.path for c in self._repo.diff(target.tree, operation.tree)}
            protected = {c.path for c in self._repo.diff(operation.tree, backup.tree)}
            cut_short = operation.label.endswith(_CUT_SHORT)
            if cut_short:  # recorded after lathe died: edits since then are in it too
                protected |= scope
            differ = self._repo.diff(backup.tree, target.tree)
            changes = [c for c in differ if c.path in scope]
            found = self._bits_back(backup, target, scope | {c.path for c in differ})
            bits, users_bits = _bits_undone(operation, backup, found, cut_short)
            protected |= users_bits
            doing = f"undo of {what}"
            report = self._restore(target, backup, changes, protected, force, doing, bits)
            report.cut_short, report.undid = cut_short, operation
            # Recorded even when nothing changed: it marks the operation as undone (the
            # user had reverted it by hand), or, when it kept every file, as the one
            # `--force` finishes and a plain undo offers again (`_operation_to_undo`);
            # one that failed to change a file, a plain undo finishes.
            extra = {"Undoes": operation.commit, "Kept": str(len(report.kept))}
            if report.failed:
                extra["Failed"] = str(len(report.failed))
            report.result = self._record(doing, "undo", extra)
            self._settle_held(report)
            _raise_if_failed(report, doing, "then `lathe undo` finishes this undo")
            return report

    def next_undo(self) -> Checkpoint | None:
        """The operation `undo()` would revert now, or None."""
        with self._locked(create=False):
            return _operation_to_undo(self._history(), False)

    def restore(self, n: int, force: bool = False) -> RestoreReport:
        """Bring the workspace back to checkpoint number `n` (`Checkpoint.n`).

        Files the user changed since lathe last wrote them are kept unless `force`.
        """
        with self._locked(create=False):
            history = self._history()
            if not 1 <= n <= len(history):
                raise UsageError(_out_of_range(n, len(history), self.workspace))
            target = history[len(history) - n]
            label = f"restore of #{n} ({target.label})"
            report = self._restore_to(history, target, label, force)
            if report.changed:
                report.result = self._snapshot(label, kind="restore")
            self._settle_held(report)
            _raise_if_failed(report, label, f"then run `lathe checkpoints restore {n}` again")
            return report

    def start_over(self, start: Checkpoint, attempt: int) -> RestoreReport:
        """Bring the workspace back to `start`, taken before a run's first attempt, for
        its attempt number `attempt`; files the user changed since lathe last wrote them
        are kept. Its checkpoint (kind "reset") names `start`: undo reverts neither it
        nor what was recorded between the two (`_not_discarded`), the failed attempts.
        As a restore, it was undoable: undo after the run brought each failed attempt
        back in turn."""
        with self._locked(create=False):
            history = self._history()
            label = f"reset to #{start.n} ({start.label}) for attempt {attempt}"
            report = self._restore_to(history, start, label, False)
            if report.backup.commit != start.commit:  # else nothing to pass over
                report.result = self._record(label, "reset", {"Back-To": start.commit})
            self._settle_held(report)
            _raise_if_failed(report, label, "the run stops rather than go on from there")
            return report

    def changed_since(self, session_id: str, left_at: str | None = None) -> builtins.list[str]:
        """The files that differ now from how the session's conversation last left them
        (the user's edits, an undo, a restore, another branch since): what the model
        must re-read when that session goes on. `left_at`: the last checkpoint on the
        session's branch, by commit (a fork's, its parent's before the branch point);
        else the newest file-changing turn of `session_id`. Empty when neither names a
        checkpoint here."""
        if not self._repo.exists():
            return []
        with self._locked(create=False):
            history = self._history()
            left = next((c for c in history if left_at and c.commit == left_at), None) or next(
                (c for c in history if c.kind == "after" and c.session == session_id), None
            )
            if left is None:
                return []
            now = self._snapshot("before the session went on", kind="before")
            return sorted(change.path for change in self._repo.diff(left.tree, now.tree))

    def before_session(
        self, session_id: str, wanted: Callable[[str], bool]
    ) -> dict[str, bytes | None]:
        """Each `wanted` file a turn of the session changed, as it was before the first
        of its turns that changed it (None: absent then): what a conversation that goes
        on is judged against, not what its earlier runs left."""
        if not self._repo.exists():
            return {}
        with self._locked(create=False):
            history = self._history()
            trees = {c.commit: c.tree for c in history}
            first_before: dict[str, str] = {}
            for checkpoint in history:  # newest first: the oldest turn's tree stays
                if checkpoint.kind != "after" or checkpoint.session != session_id:
                    continue
                tree = trees.get(checkpoint.parent or "")
                for change in checkpoint.files:
                    if tree is not None and wanted(change.path):
                        first_before[change.path] = tree
            return {path: self._repo.read(tree, path) for path, tree in first_before.items()}

    @property
    def unrecorded(self) -> tuple[str, ...]:
        """The repositories nested in the workspace at the last snapshot this process
        took: their files are in no checkpoint (each is recorded as its commit alone)."""
        return self._repo.nested

    def list(self) -> builtins.list[Checkpoint]:
        """Every checkpoint, newest first; the oldest is number 1."""
        if not self._repo.exists():
            return []
        with self._locked(create=False):
            return self._history()

    # -- internals ------------------------------------------------------------------

    def _snapshot(
        self, label: str, *, turn: int | None = None, kind: str, session: str | None = None
    ) -> Checkpoint:
        self._repo.ensure()
        tree = self._repo.stage_all()
        head = self._repo.head()
        newest = self._checkpoint(head) if head is not None else None
        modes = None
        if newest is not None and newest.tree == tree and kind != "before":
            # No content changed, but bits may have (`chmod 666 secret.env`), which no
            # tree shows: that turn or restore is a change to record, and to undo.
            modes = Modes.of_files(self._repo.file_modes())
            if newest.modes is None or newest.modes == modes:
                return newest
        folders = self._folders()
        if modes is None:
            modes = Modes.of_files(self._repo.file_modes())
        # A state found ("before") with only a new empty folder, or other permission
        # bits, is another state: a restore to the newest would not know to keep them.
        state = (tree, folders, modes)
        if newest is not None and (newest.tree, newest.folders, newest.modes) == state:
            return newest
        extra = {"Session": session} if session else {}
        extra |= _folders_trailer(folders) | {"Modes": modes.trailer()}
        return self._commit(tree, head, encode_message(label, turn, kind, extra))

    def _record(self, label: str, kind: str, extra: dict[str, str]) -> Checkpoint:
        """A checkpoint of the workspace as it is, even if no file changed since the last."""
        tree = self._repo.stage_all()
        modes = Modes.of_files(self._repo.file_modes())
        extra = {**extra, **_folders_trailer(self._folders()), "Modes": modes.trailer()}
        return self._commit(tree, self._repo.head(), encode_message(label, None, kind, extra))

    def _folders(self) -> tuple[str, ...]:
        """The folders with no recorded file (an empty `logs/`), which a checkpoint names
        so that a restore to it keeps them: undo had removed one the user had."""
        return tuple(self._repo.folders_without_files()[:_FOLDERS_KEPT])

    def _commit(self, tree: str, parent: str | None, message: str) -> Checkpoint:
        commit = self._repo.commit(tree, parent, message)
        known_parent = self._known.get(parent or "")
        # The chain is first-parent, so a new commit's number is its parent's plus one.
        return self._checkpoint(commit, known_parent.n + 1 if known_parent else None)

    def _checkpoint(self, commit: str, n: int | None = None) -> Checkpoint:
        """The checkpoint of `commit` (its number `n`, when known, saves counting)."""
        known = self._known.get(commit)
        if known is None:
            record = self._repo.log(commit, max_count=1)[0]
            known = checkpoint_from(record, self._repo.count(commit) if n is None else n)
            self._known[commit] = known
        return known

    def _restore_to(
        self, history: builtins.list[Checkpoint], target: Checkpoint, label: str, force: bool
    ) -> RestoreReport:
        """Record the workspace, then bring it back to `target`; files the user changed
        since lathe last wrote them are kept unless `force` (`_users_files`). `label`
        names the restore."""
        backup = self._snapshot(f"before {label}", kind="before")
        if backup.commit != history[0].commit:
            history = [backup, *history]
        changes = self._repo.diff(backup.tree, target.tree)
        protected, cut = self._users_files(history, backup, {c.path for c in changes})
        found = self._bits_back(backup, target, {c.path for c in changes})
        users_bits, cut_bits = _users_bits(history, backup, found)
        protected, cut = protected | users_bits, cut | cut_bits
        bits = {path: back for path, (_, back) in found.items()}
        report = self._restore(target, backup, changes, protected, force, label, bits)
        report.cut_short = not cut.isdisjoint(report.kept + report.forced)
        return report

    def _users_files(
        self, history: builtins.list[Checkpoint], now: Checkpoint, paths: set[str]
    ) -> tuple[set[str], set[str]]:
        """Those of `paths` that differ now from how lathe last left them, and those of
        them that are the user's because a cut-short turn changed them last.

        Lathe last left a file as the newest lathe checkpoint whose own changes (against
        its parent, the state just before it) name it has it: an agent turn, a restore,
        an undo, a reset each change only what they wrote. One never written by lathe is
        judged against the first checkpoint. Not against the newest lathe checkpoint:
        it records the whole workspace, so it had taken in every edit the user made
        before it, and a second restore overwrote a file the first had kept. A turn
        recorded after its lathe died holds the user's edits since the kill too: its
        files are the user's, as for `undo`."""
        last_written: dict[str, Checkpoint] = {}
        left = set(paths)
        for checkpoint in history:  # newest first
            if not left:
                break
            if checkpoint.by_lathe:
                for change in checkpoint.files:
                    if change.path in left:
                        last_written[change.path] = checkpoint
                        left.discard(change.path)
        by_baseline: dict[str, set[str]] = {}
        for path in paths:
            baseline = last_written.get(path, history[-1])
            by_baseline.setdefault(baseline.commit, set()).add(path)
        by_commit = {c.commit: c for c in history}
        users: set[str] = set()
        cut: set[str] = set()
        for commit, written in by_baseline.items():
            baseline = by_commit[commit]
            if baseline.kind == "after" and baseline.label.endswith(_CUT_SHORT):
                cut |= written
            else:
                users |= written & {c.path for c in self._repo.diff(baseline.tree, now.tree)}
        return users | cut, cut

    def _restore(
        self,
        target: Checkpoint,
        backup: Checkpoint,
        changes: builtins.list[Change],
        protected: set[str],
        force: bool,
        doing: str,
        bits: dict[str, int] | None = None,
    ) -> RestoreReport:
        """Bring `changes` to `target`, and the files of `bits` (see `_bits_back`) to
        its permission bits. What can be seen beforehand not to be changeable (a folder
        that may not be written, an immutable file, another user's file to chmod) stops
        it before anything changes, with a `UsageError` naming each file and why: it had
        stopped half done, no undo recorded, advising to move the store aside."""
        report = RestoreReport(target=target, backup=backup)
        deletes, writes = plan_restore(report, changes, protected, force)
        chmods = plan_modes(report, bits or {}, protected, force)
        blocked = unchangeable(self.workspace, deletes, writes, chmods)
        if blocked:
            raise UsageError(
                f"{doing} not done: {plural(len(blocked), 'file')} cannot be changed here, "
                f"so nothing was changed:{_why_each(blocked)}\nmake "
                f"{'it' if len(blocked) == 1 else 'them'} changeable, then run it again"
            )
        apply_restore(self._repo, report, deletes, writes, chmods)
        return report

    def _settle_held(self, report: RestoreReport) -> None:
        """Move the files of `report.held` its result does not record (still ignored,
        unreadable) to `skipped`: for those no restore brings the target's content back.
        The others are recorded as the result's, lathe's: restoring the target again
        writes its content back, theirs kept in the checkpoint it records first."""
        if not report.held:
            return
        recorded = self._repo.paths(report.result.tree) if report.result else set()
        report.skipped = sorted([*report.skipped, *(p for p in report.held if p not in recorded)])
        report.held = [p for p in report.held if p in recorded]

    def _bits_back(
        self, now: Checkpoint, target: Checkpoint, other: set[str]
    ) -> dict[str, tuple[bool, int]]:
        """The regular files whose content `now` and `target` share (not in `other`, the
        paths whose content differs) but whose recorded permission bits differ, which no
        tree shows: each with whether it is executable and its bits at `target`. Empty
        when either was recorded by an older lathe, which kept no bits."""
        if now.modes is None or target.modes is None or now.modes == target.modes:
            return {}
        back: dict[str, tuple[bool, int]] = {}
        for path, executable in self._repo.regular_files(now.tree).items():
            bits = target.modes.of(path, executable)
            if path not in other and bits != now.modes.of(path, executable):
                back[path] = (executable, bits)
        return back

    def _history(self) -> builtins.list[Checkpoint]:
        if self._repo.head() is None:
            return []
        records = self._repo.log()
        return [checkpoint_from(r, len(records) - k) for k, r in enumerate(records)]

    def _open_turn(self, turn: int, session_id: str | None) -> None:
        """Mark the turn open: its number and session in a file, and a lock held until
        `after_turn` that tells a live turn from one whose process died."""
        self._close_turn()
        lock = FileLock(self._repo.root / _TURN_LOCK)
        if lock.try_acquire() is not None:
            lock.release()  # the file it opened to try
            return  # another process's turn is open here: it marks its own
        self._turn_lock = lock
        record = json.dumps({"turn": turn, "session": session_id})
        (self._repo.root / _OPEN_TURN).write_text(record, encoding="utf-8")

    def _close_turn(self, *, recorded: bool = True) -> None:
        """Let go of our open turn; its mark too once its "after" is `recorded`."""
        if self._turn_lock is not None:
            if recorded:
                (self._repo.root / _OPEN_TURN).unlink(missing_ok=True)
            self._turn_lock.release()
            self._turn_lock = None

    def _close_cut_turn(self) -> None:
        """Record a turn whose process died before its `after_turn` as ended where it
        left the workspace (`after turn N (cut short)`)."""
        marker = self._repo.root / _OPEN_TURN
        if self._turn_lock is not None or not marker.exists():
            return
        probe = FileLock(self._repo.root / _TURN_LOCK)
        if probe.try_acquire() is not None:
            probe.release()  # the file it opened to try
            return  # that turn goes on in another process
        try:
            try:
                cut = json.loads(marker.read_text(encoding="utf-8"))
                turn, session = int(cut["turn"]), cut.get("session")
            except (OSError, ValueError, KeyError, TypeError):
                marker.unlink(missing_ok=True)  # unreadable: nothing to record it by
                return
            label = f"after turn {turn}{_CUT_SHORT}"
            self._snapshot(label, turn=turn, kind="after", session=session)
            marker.unlink(missing_ok=True)
        finally:
            probe.release()

    @contextlib.contextmanager
    def _locked(self, *, create: bool) -> Iterator[None]:
        if not self.workspace.is_dir():
            raise UsageError(f"workspace {self.workspace} is not a directory")
        root = self._repo.root
        if not create and not self._repo.exists():
            raise UsageError(
                f"no checkpoints for {self.workspace} yet: lathe records them when an "
                "agent turn changes files there (use -C DIR to name another workspace)"
            )
        if not self._private:  # it holds copies of the workspace's files
            private_folder(root)
            self._private = True
        with FileLock(root / "lock"):
            # Only lathe, under this lock, writes the shadow index: a lock file git left
            # there is a kill -9's leftover, and would block every snapshot for good.
            (root / "git" / "index.lock").unlink(missing_ok=True)
            if self._repo.exists():
                self._repo.mend_ref()
                self._close_cut_turn()
            yield


def _operation_to_undo(history: list[Checkpoint], force: bool) -> Checkpoint | None:
    newest = next((c for c in history if c.by_lathe), None)
    # The user saw "kept N files, use --force" and reran: finish that same undo. One that
    # kept every file did nothing, so a plain undo offers its operation again, not an
    # older one; so does one that could not change a file (made changeable since).
    to_finish = newest is not None and newest.kind == "undo" and (newest.kept or newest.failed)
    if to_finish and (force or newest.failed or not newest.files):
        return next((c for c in history if c.commit == newest.undoes), None)
    # An undo that kept every file reverted nothing: its operation is still to undo.
    undone = {c.undoes for c in history if c.kind == "undo" and (c.files or not c.kept)}
    return next(
        (
            c
            for c in _not_discarded(history)
            if c.kind in UNDOABLE_KINDS and c.commit not in undone and c.parent
        ),
        None,
    )


def _not_discarded(history: list[Checkpoint]) -> Iterator[Checkpoint]:
    """`history` (newest first) without what a reset discarded: the checkpoints between
    it and the one it went back to, a run's failed attempts."""
    back_to = None
    for checkpoint in history:
        if back_to is None or checkpoint.commit == back_to:
            back_to = checkpoint.back_to
            yield checkpoint


def _bits_at(checkpoint: Checkpoint, path: str, executable: bool) -> int | None:
    """The permission bits `checkpoint` recorded for the file; None if it kept none."""
    return None if checkpoint.modes is None else checkpoint.modes.of(path, executable)


def _bits_undone(
    operation: Checkpoint, now: Checkpoint, found: dict[str, tuple[bool, int]], cut_short: bool
) -> tuple[dict[str, int], set[str]]:
    """Of `found` (see `Checkpoints._bits_back`, the target being the state before
    `operation`), the files whose bits an undo of `operation` sets back: those it
    changed (unlike the target's). And those of them that are the user's: their bits
    changed since (`now` unlike `operation`), or the operation was cut short."""
    bits: dict[str, int] = {}
    users: set[str] = set()
    for path, (executable, back) in found.items():
        then = _bits_at(operation, path, executable)
        if then == back:
            continue  # changed after the operation: not its change to undo
        bits[path] = back
        if cut_short or then != _bits_at(now, path, executable):
            users.add(path)
    return bits, users


def _users_bits(
    history: list[Checkpoint], now: Checkpoint, found: dict[str, tuple[bool, int]]
) -> tuple[set[str], set[str]]:
    """Of `found` (see `Checkpoints._bits_back`), the files whose bits differ `now` from
    how lathe last left them, and those that are the user's because a cut-short turn
    changed them last: as `Checkpoints._users_files` judges content, where a lathe
    checkpoint set a file's bits when it names the file or records other bits for it
    than its parent does."""
    by_commit = {c.commit: c for c in history}
    users: set[str] = set()
    cut: set[str] = set()
    for path, (executable, _) in found.items():
        baseline = next(
            (
                c
                for c in history  # newest first
                if c.by_lathe and _set_bits_of(c, by_commit.get(c.parent or ""), path, executable)
            ),
            history[-1],
        )
        if baseline.kind == "after" and baseline.label.endswith(_CUT_SHORT):
            cut.add(path)
        elif _bits_at(baseline, path, executable) != _bits_at(now, path, executable):
            users.add(path)
    return users | cut, cut


def _set_bits_of(
    checkpoint: Checkpoint, parent: Checkpoint | None, path: str, executable: bool
) -> bool:
    """Whether `checkpoint` set the file's bits: it names the file (written, so its bits
    too), or records other bits for it than `parent`, the state before it."""
    if any(change.path == path for change in checkpoint.files):
        return True
    return parent is not None and _bits_at(checkpoint, path, executable) != _bits_at(
        parent, path, executable
    )


def _describe(operation: Checkpoint) -> str:
    if operation.kind == "after" and operation.turn is not None:
        return f"turn {operation.turn}"
    return repr(operation.label)


def _out_of_range(n: int, count: int, workspace: Path) -> str:
    if count == 0:
        return f"no checkpoints for {workspace} yet: there is nothing to restore"
    return (
        f"no checkpoint #{n} for {workspace}: choose 1 to {count} "
        "(`lathe checkpoints list` shows them)"
    )


def _not_recorded(nested: tuple[str, ...]) -> str:
    """What a message adds when nested repositories hold files no checkpoint has."""
    if not nested:
        return ""
    shown = some_of([visible_name(name) for name in nested], 5)
    return f"; files inside nested git repositories ({shown}) are in no checkpoint"


def _folders_trailer(folders: tuple[str, ...]) -> dict[str, str]:
    """The trailer naming `folders` (read back by `model.checkpoint_from`). ASCII JSON: a
    name that is not UTF-8 (a surrogate), or holds U+2028, must survive the commit
    message and its line split."""
    return {"Folders": json.dumps(folders)} if folders else {}


def _raise_if_failed(report: RestoreReport, doing: str, then: str) -> None:
    """Say what a restore did and which files it could not change, once its result is
    recorded (`LatheError`): the state before it, `report.backup`, takes it back."""
    if not report.failed:
        return
    done = ", ".join(
        f"{verb} {len(names)}"
        for verb, names in (
            ("reverted", report.restored),
            ("recreated", report.recreated),
            ("deleted", report.deleted),
            ("modes set back", report.modes),
        )
    )
    yours = [visible_name(path) for path in report.kept]
    kept = f"; kept as yours: {some_of(yours, 10)}" if report.kept else ""
    raise LatheError(
        f"{doing} not finished: {plural(len(report.failed), 'file')} could not be "
        f"changed:{_why_each(report.failed)}\nthe rest is done ({done}{kept}); the state "
        f"before it is checkpoint #{report.backup.n}. Make "
        f"{'it' if len(report.failed) == 1 else 'them'} changeable, {then}"
    )


def _why_each(paths: dict[str, str]) -> str:
    """Each file with why, on a line of its own: its name as `visible_name` writes it,
    so that a newline in one cannot split the list."""
    return "".join(f"\n  {visible_name(path)}: {why}" for path, why in sorted(paths.items()))
