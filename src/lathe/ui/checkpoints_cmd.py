"""`lathe undo` and `lathe checkpoints list|restore`: the face of lathe.checkpoint.

Attach to the main group with `main.add_command(undo_command)` and
`main.add_command(checkpoints_group)`. Exit codes: 0 done, 2 the user must change
something (nothing to undo, no such checkpoint, git missing), 1 the store failed.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import click

from lathe.checkpoint import Checkpoint, Checkpoints, RestoreReport, find_workspace
from lathe.errors import LatheError, UsageError
from lathe.home import lathe_home
from lathe.plural import plural
from lathe.ui.options import LatheCommand, LatheGroup, workspace_option

_SHOWN_FILES = 4
_MARK = {"added": "A", "modified": "M", "deleted": "D"}

_cwd_option = workspace_option("Workspace directory (default: the current directory).")


class _CheckpointNumber(click.ParamType):
    """A checkpoint's number as `lathe checkpoints list` and `lathe sessions show` print
    it: `7` or `#7`."""

    name = "N"

    def convert(self, value, param, ctx) -> int:
        if isinstance(value, int):
            return value
        digits = str(value).strip().removeprefix("#")
        # ASCII only: `isdigit` takes "²" (which `int` refuses) and "٣" (which it reads as 3).
        if not (digits.isascii() and digits.isdigit()) or int(digits) < 1:
            self.fail(f"{value!r} is not a checkpoint number such as 7 or #7", param, ctx)
        return int(digits)


_force_option = click.option(
    "--force", is_flag=True, help="Also overwrite files you changed since lathe last did."
)


@click.command("undo", cls=LatheCommand)
@_cwd_option
@_force_option
def undo_command(workspace: Path, force: bool) -> None:
    """Restore the workspace to before the last agent turn that changed files."""
    with _errors_exit():
        checkpoints = _open(workspace, "undo")
        with _held(checkpoints, "lathe undo"):
            report = checkpoints.undo(force=force)
    if report.undid is not None:
        click.echo(f"Undo of {undone_operation(report.undid)}:")
    _print_report(report, what="undo")
    _fail_when_all_kept(report)


@click.group("checkpoints", cls=LatheGroup)
def checkpoints_group() -> None:
    """List recorded workspace states and go back to one of them."""


@checkpoints_group.command("list")
@_cwd_option
def list_command(workspace: Path) -> None:
    """Show checkpoints, newest first. #N is a checkpoint's number for good: #1 is the
    first recorded here, and `lathe sessions show` names them the same way. Piped, each
    is one tab-separated line: #N, time, kind, label, files."""
    from lathe.exec.terminal import visible_name
    from lathe.ui.table import Column, clip, heading, print_empty, print_list, terminal_width

    with _errors_exit():
        store = _open(workspace, "checkpoints list", err=True)
        checkpoints = store.list()
    if not checkpoints:
        print_empty(f"No checkpoints for {visible_name(str(store.workspace))} yet.")
        return
    width = terminal_width()
    if width is not None:
        where = clip(visible_name(str(store.workspace)), max(width - 16, 12), keep_end=True)
        click.echo(heading(f"Checkpoints of {where}:"))
    columns = [
        Column("N"),
        Column("TIME", drop=2),
        Column("KIND", drop=3),
        Column("LABEL", flex=True, min_width=14),
        Column("FILES", flex=True, min_width=8, drop=1),
    ]
    rows = [[f"#{c.n}", _local_time(c), c.kind, c.label, _files_summary(c)] for c in checkpoints]
    print_list(columns, rows)


@checkpoints_group.command("restore")
@click.argument("n", type=_CheckpointNumber())
@_cwd_option
@_force_option
def restore_command(n: int, workspace: Path, force: bool) -> None:
    """Restore the workspace to checkpoint N (or #N) of `lathe checkpoints list`."""
    with _errors_exit():
        checkpoints = _open(workspace, "restore")
        with _held(checkpoints, "lathe checkpoints restore"):
            report = checkpoints.restore(n, force=force)
    _print_report(report, what="restore")
    _fail_when_all_kept(report)


def _open(workspace: Path, doing: str, *, err: bool = False) -> Checkpoints:
    """The checkpoints of `workspace`, or of the nearest folder above it that has some,
    which is named (on stderr when `err`, in lathe's voice): the files a command there
    touches may lie outside the folder given."""
    from lathe.exec.terminal import visible_name

    home = lathe_home()
    found = find_workspace(workspace, home)
    if found != workspace.resolve():
        shown = visible_name(str(found))
        where = f"{doing} in {shown} (the nearest folder lathe has checkpoints for)"
        click.echo(f"lathe: {where}" if err else where, err=err)
    return Checkpoints(found, home)


def undone_operation(checkpoint: Checkpoint) -> str:
    """An undone operation as the user knows it, so an earlier run's turn is not taken
    for the one just run: the turn, its session and the message that started its run
    (`_started_by`), or its label. `lathe undo` and the app's /undo both say it."""
    from lathe.ui.table import clip

    if checkpoint.kind == "after" and checkpoint.turn is not None:
        what = checkpoint.label.removeprefix("after ")  # "turn 2", "turn 2 (cut short)"
    else:
        what = f'"{checkpoint.label}"'
    when = f"recorded {_local_time(checkpoint)}"
    if checkpoint.session is None:
        return f"{what} ({when})"
    message = " ".join(_started_by(checkpoint, checkpoint.session).split())
    task = f'"{clip(message, 60)}", ' if message else ""
    return f"{what} of session {checkpoint.session} ({task}{when})"


def _started_by(checkpoint: Checkpoint, session_id: str) -> str:
    """The message the person sent that started the run whose turn made `checkpoint`:
    the last one before the session's entry for it. Each message of a conversation (and
    each `lathe run --continue`) is a run whose turns count from 1, so the session's
    title, its first message, had been quoted for every turn 1. "" when the session or
    the entry is gone (a turn cut short by a kill has none)."""
    from lathe.session import CheckpointEntry, MessageEntry, SessionStore
    from lathe.types import UserMessage

    try:
        with SessionStore(lathe_home()).open(session_id, readonly=True) as session:
            made = [
                e.id
                for e in session.entries
                if isinstance(e, CheckpointEntry) and e.ref == checkpoint.commit
            ]
            before = session.branch(made[0]) if made else []
    except (LatheError, OSError):
        return ""
    sent = [
        e.message.content
        for e in before
        if isinstance(e, MessageEntry)
        and isinstance(e.message, UserMessage)
        and e.message.origin == "user"  # not a note of lathe's
    ]
    return sent[-1] if sent else ""


def _held(checkpoints: Checkpoints, doing: str):
    """Undoing under a running agent would mix its edits with the restore."""
    from lathe.workspace_lock import hold_workspace

    return hold_workspace(checkpoints.workspace, doing=doing, when_busy="then run this again")


@contextmanager
def _errors_exit() -> Iterator[None]:
    """Errors as lathe's one line (files listed below it, each on its own: the store
    writes their names with `visible_name`), no control byte acting on the terminal."""
    from lathe.exec.terminal import visible_text

    try:
        yield
    except UsageError as exc:
        click.echo(f"lathe: {visible_text(str(exc))}", err=True)
        raise SystemExit(2) from None
    except LatheError as exc:
        click.echo(f"lathe: {visible_text(str(exc))}", err=True)
        raise SystemExit(1) from None


def _print_report(report: RestoreReport, *, what: str) -> None:
    target = report.target
    if report.changed:
        click.echo(f"Restored the workspace to {_describe(target)}.")
    elif report.kept or report.skipped or report.held:
        click.echo(
            f"Nothing was changed: every file that differs from {_describe(target)} was "
            "left as it is (below)."
        )
    else:
        click.echo(f"Nothing to change: the workspace already matches {_describe(target)}.")
    _print_paths("reverted", report.restored)
    _print_paths("recreated", report.recreated)
    _print_paths("deleted", report.deleted)
    _print_paths("mode restored", report.modes)
    if report.forced:
        click.secho(
            f"Overwrote {plural(len(report.forced), 'file')} you had changed (--force):",
            fg="yellow",
            err=True,
        )
        _print_paths("", report.forced, err=True)
    if report.kept:
        why = (
            "the turn undone was cut short (lathe was killed), so its changes cannot be told "
            "from edits made since; kept"
            if report.cut_short
            else "kept"
        )
        click.secho(
            f"lathe: warning: {why} {plural(len(report.kept), 'file')} you changed since "
            "lathe last touched them; rerun with --force to overwrite them:",
            fg="yellow",
            err=True,
        )
        _print_paths("", report.kept, err=True)
    if report.skipped:
        click.secho(
            "lathe: warning: left as they are, because checkpoints do not record them "
            "(ignored files, nested git repositories):",
            fg="yellow",
            err=True,
        )
        _print_paths("", report.skipped, err=True)
    if report.held and report.result is not None:
        n = target.n
        click.secho(
            "lathe: warning: not overwritten, because what they held was ignored, in no "
            "checkpoint, so overwriting it could not be undone; it is recorded now "
            f"(checkpoint #{report.result.n}), and `lathe checkpoints restore {n}` writes "
            f"back what checkpoint #{n} holds:",
            fg="yellow",
            err=True,
        )
        _print_paths("", report.held, err=True)
    if report.changed:
        n = report.backup.n
        back = "lathe undo" if what == "restore" else f"lathe checkpoints restore {n}"
        click.echo(f"The state before this {what} is checkpoint #{n}: `{back}` brings it back.")


def _fail_when_all_kept(report: RestoreReport) -> None:
    """Exit 1 when nothing was done because every file was the user's: a script must
    not take it for done."""
    if report.kept and not report.changed:
        raise SystemExit(1)


def _print_paths(verb: str, paths: list[str], *, err: bool = False) -> None:
    from lathe.exec.terminal import visible_name

    for path in paths:
        name = visible_name(path)  # as the errors name it (lathe.checkpoint.store)
        click.echo(f"  {verb:<10} {name}" if verb else f"  {name}", err=err)


def _describe(checkpoint: Checkpoint) -> str:
    turn = "" if checkpoint.turn is None else f", turn {checkpoint.turn}"
    return f'"{checkpoint.label}" ({_local_time(checkpoint)}{turn})'


def _local_time(checkpoint: Checkpoint) -> str:
    return checkpoint.time.astimezone().strftime("%Y-%m-%d %H:%M:%S")


def _files_summary(checkpoint: Checkpoint) -> str:
    if checkpoint.parent is None:
        return "(first checkpoint)"
    if not checkpoint.files:
        return "(no file changes)"
    shown = [f"{_MARK[f.status]} {f.path}" for f in checkpoint.files[:_SHOWN_FILES]]
    more = len(checkpoint.files) - _SHOWN_FILES
    if more > 0:
        shown.append(f"… and {more} more")
    return ", ".join(shown)
