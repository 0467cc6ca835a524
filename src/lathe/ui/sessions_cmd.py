"""`lathe sessions …`: list, show, export and fork saved sessions.

Attached to the main CLI with `cli.add_command(sessions)`. Errors print `lathe: …` on
stderr and exit 2; load warnings (a torn last line, a corrupt entry) go to stderr too,
so stdout stays the transcript or export alone. `list` fits the terminal and prints
plain tab-separated lines when piped (`ui/table.py`).
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import click

from lathe.errors import UsageError
from lathe.plural import plural
from lathe.ui.options import LatheGroup, workspace_option

if TYPE_CHECKING:
    from lathe.session import Session, SessionStore

F = TypeVar("F", bound=Callable[..., Any])
EXIT_USAGE = 2


def _fails_cleanly(command: F) -> F:
    """Turn a UsageError into `lathe: message` on stderr and exit code 2."""

    @functools.wraps(command)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return command(*args, **kwargs)
        except UsageError as error:
            click.echo(f"lathe: {error}", err=True)
            raise SystemExit(EXIT_USAGE) from None

    return wrapper  # type: ignore[return-value]


def _store() -> SessionStore:
    from lathe.home import lathe_home
    from lathe.session import SessionStore

    return SessionStore(lathe_home())


def _warn(warnings: list[str], session_id: str) -> None:
    for warning in warnings:
        click.echo(f"lathe: session {session_id}: {warning}", err=True)


def checkpoint_numbers(session: Session) -> dict[str, int]:
    """Commit -> number of the checkpoints of the session's workspace, so a transcript
    names them as `lathe checkpoints list` does; empty when there are none to name (the
    session made none, or its workspace or checkpoint store is gone)."""
    from lathe.checkpoint import Checkpoints
    from lathe.errors import LatheError
    from lathe.home import lathe_home
    from lathe.session import CheckpointEntry

    if not any(isinstance(entry, CheckpointEntry) for entry in session.entries):
        return {}
    try:
        listed = Checkpoints(Path(session.header.cwd), lathe_home()).list()
    except LatheError:
        return {}
    return {checkpoint.commit: checkpoint.n for checkpoint in listed}


def _when(moment: datetime) -> str:
    return moment.astimezone().strftime("%Y-%m-%d %H:%M")


@click.group("sessions", cls=LatheGroup)
def sessions() -> None:
    """List, show, export and fork saved sessions."""


@sessions.command("list")
@click.option("--all", "show_all", is_flag=True, help="Sessions of every workspace.")
@workspace_option("Workspace whose sessions to list (default: the current directory).")
@_fails_cleanly
def list_sessions(show_all: bool, workspace: Path) -> None:
    """Sessions of this workspace, most recent first. On a terminal the task text is cut
    to fit, never the id; piped, each session is one tab-separated line: id, updated,
    status, turns, tokens, (workspace,) task."""
    from lathe.home import lathe_home
    from lathe.session import listing
    from lathe.ui.table import Column, print_empty, print_list

    # Not through SessionStore: a listing the index answers needs no entry models.
    root = listing.sessions_root(lathe_home())
    unreadable: dict[Path, Exception] = {}
    summaries = listing.list_sessions(root, None if show_all else workspace, unreadable=unreadable)
    for path, error in sorted(unreadable.items()):
        click.echo(f"lathe: warning: left out {path}: {_unreadable(error)}", err=True)
    if not summaries:
        where = "" if show_all else f" for {workspace.resolve()} (--all lists every workspace)"
        print_empty(f"no sessions{where}")
        return
    columns = [
        Column("ID"),
        Column("UPDATED", drop=2),
        Column("STATUS", drop=3),
        Column("TURNS", right=True, drop=5),
        Column("TOKENS", right=True, drop=4),
    ]
    if show_all:
        columns.append(Column("WORKSPACE", flex=True, keep_end=True, drop=1))
    columns.append(Column("TASK", flex=True))
    rows = []
    for summary in summaries:
        row = [
            summary.id,
            _when(summary.updated),
            summary.status,
            str(summary.turns),
            f"{summary.tokens:,}",
        ]
        if show_all:
            row.append(summary.cwd)
        rows.append([*row, summary.title or "-"])
    print_list(columns, rows)


def _unreadable(error: Exception) -> str:
    """Why `list` left a file out, and what to do about it."""
    from lathe.session.loader import NewerSessionFormat

    if isinstance(error, NewerSessionFormat):
        return (
            f"it uses session format version {error.version}, newer than this lathe "
            "understands; upgrade lathe to list and open it"
        )
    return (
        "not a readable lathe session (empty, cut short while being created, or with a "
        "damaged header); move it aside"
    )


@sessions.command("show")
@click.argument("session_id", metavar="ID")
@_fails_cleanly
def show(session_id: str) -> None:
    """A readable transcript of session ID's current branch (a unique id prefix is
    enough)."""
    from lathe.exec.terminal import visible_text
    from lathe.session.transcript import render_text

    session = _store().open(session_id, readonly=True)
    _warn(session.warnings, session.id)
    text = render_text(session, checkpoints=checkpoint_numbers(session))
    click.echo(visible_text(text), nl=False)  # a reply's escape codes: shown, not obeyed
    click.echo(_family(session), nl=False)


def _family(session: Session) -> str:
    """Where a subagent's session comes from, and the subagents and forks a session
    started: the tree `show` ends with ("" when there is none)."""
    from lathe.home import lathe_home
    from lathe.session import listing

    lines = []
    header = session.header
    if header.parent_call:
        lines.append(
            f"Subagent of session {header.parent_session} (its call {header.parent_call})."
        )
    root = listing.sessions_root(lathe_home())
    started = [
        s for s in listing.list_sessions(root, Path(header.cwd)) if s.parent_session == header.id
    ]
    for summary in sorted(started, key=lambda s: s.created):
        call = summary.parent_call
        what = f"subagent for call {call}" if call else "fork"
        lines.append(
            f"  {summary.id}  {what}  {summary.status}, {plural(summary.turns, 'turn')}  "
            f"{summary.title or '-'}"
        )
    if len(lines) > (1 if header.parent_call else 0):
        lines.insert(1 if header.parent_call else 0, "Started from this session:")
    return "\n" + "\n".join(lines) + "\n" if lines else ""


@sessions.command("export")
@click.argument("session_id", metavar="ID")
@click.option(
    "--format",
    "output_format",
    type=click.Choice(["markdown", "json"]),
    default="markdown",
    show_default=True,
    help="markdown: the current branch for reading; json: every entry, all branches.",
)
@_fails_cleanly
def export(session_id: str, output_format: str) -> None:
    """Write session ID to stdout as markdown or JSON."""
    from lathe.exec.terminal import visible_text
    from lathe.session.transcript import export_json, render_markdown

    session = _store().open(session_id, readonly=True)
    _warn(session.warnings, session.id)
    if output_format == "json":
        click.echo(export_json(session), nl=False)
    else:
        markdown = render_markdown(session, checkpoints=checkpoint_numbers(session))
        click.echo(visible_text(markdown), nl=False)  # as `show`: escape codes written out


@sessions.command("fork")
@click.argument("session_id", metavar="ID")
@click.option(
    "--at",
    "at_entry",
    metavar="ENTRY",
    help="Entry id (or prefix) to fork after; default the session's last entry.",
)
@_fails_cleanly
def fork(session_id: str, at_entry: str | None) -> None:
    """Copy session ID up to an entry into a new session and print the new id;
    continue it with `lathe run --resume NEW_ID`."""
    if at_entry is not None and not at_entry.strip():
        raise UsageError(
            f"--at {at_entry!r} names no entry: give an entry id or its first characters "
            f"(`lathe sessions show {session_id}` shows them), or leave "
            "out --at to fork after the last entry"
        )
    with _store().fork(session_id, at_entry) as forked:
        click.echo(forked.id)
