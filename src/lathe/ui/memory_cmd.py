"""`lathe memory show|edit|clear`: the instruction files a run reads and the memory it
keeps (`lathe.instructions`, `lathe.memory`). The interactive `/memory` prints the
same report, with the files a tool has reached so far."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

import click

from lathe.ui.options import LatheCommand, LatheGroup, workspace_option

if TYPE_CHECKING:
    from lathe.config.schema import MemoryConfig
    from lathe.instructions import InstructionFile
    from lathe.memory import MemoryStore

_SCOPE = click.option(
    "--scope",
    type=click.Choice(["project", "user"]),
    default="project",
    show_default=True,
    help="project: this repository's memory; user: the one every project shares.",
)


def report(
    files: Sequence[InstructionFile],
    store: MemoryStore,
    settings: MemoryConfig,
    skipped: Sequence[str] = (),
) -> list[str]:
    """The lines of the report: each instruction file in the order a run joins them,
    with its size, and those skipped (`Instructions.notes`), then each memory file with
    its entries."""
    from lathe.plural import plural
    from lathe.tools.files import printable

    lines = [
        f"Instruction files, in the order they are read ({plural(len(files), 'file')}, "
        f"budget {settings.instructions_max_bytes:,} bytes):"
    ]
    width = max((len(f.label) for f in files), default=0)
    for number, found in enumerate(files, 1):
        cut = "  (cut: over the budget)" if found.cut else ""
        lines.append(f"  {number}. {found.label.ljust(width)}  {plural(found.size, 'byte')}{cut}")
    if not files:
        names = " or ".join(settings.instruction_files)
        lines.append(f"  none read: no {names} from the repository root down to here")
    lines += [f"  {note}" for note in skipped]
    lines.append("  (files below the working directory are read when a tool first works there)")
    for scope, file in store.files.items():
        entries = file.entries()
        lines.append("")
        lines.append(
            f"{scope.capitalize()} memory: {file.path} ({plural(len(entries), 'entry', 'entries')}"
            f", {file.size():,} of {store.max_bytes:,} bytes)"
        )
        for entry in entries:
            first, *rest = printable(entry).splitlines()
            lines += [f"  - {first}", *(f"    {line}" for line in rest)]
    return lines


def _settings(workspace: Path):
    """The workspace's `[memory]` settings and the read rules a run would apply — those
    of a project file that need trust only once trusted (`config_cmd.applied_config`) —
    and the lines naming the `[memory]` settings left out until then."""
    from lathe.config.render import toml_value
    from lathe.policy.rules import RuleSet
    from lathe.ui.config_cmd import applied_config

    loaded, ignored = applied_config(workspace)  # a UsageError: one line, exit 2
    config = loaded.config
    rules = RuleSet.from_strings(allow=config.permissions.allow, deny=config.permissions.deny)
    settings = ignored.settings if ignored else ()
    lines = [
        f"  {key} = {toml_value(value)}" for key, value in settings if key.startswith("memory.")
    ]
    if lines:
        lines.insert(
            0, f"Ignored until you trust them with `lathe trust` ({ignored.file} sets them):"
        )
    return config.memory, rules.denied_read_patterns(), lines


def _store(workspace: Path, settings: MemoryConfig) -> MemoryStore:
    from lathe.memory import MemoryStore

    return MemoryStore(workspace, settings.memory_max_bytes)


@click.group("memory", cls=LatheGroup)
def memory_group() -> None:
    """The instruction files lathe reads and the memory it keeps between sessions."""


@memory_group.command("show", cls=LatheCommand)
@workspace_option("Workspace to report on (default: the current directory).")
def show_command(workspace: Path) -> None:
    """List the instruction files a run here reads, in order, with their sizes, then
    the project and user memory files with their entries."""
    from lathe.instructions import Instructions, user_instructions_path

    settings, no_read, ignored = _settings(workspace)
    found = Instructions(
        workspace,
        names=settings.instruction_files,
        max_bytes=settings.instructions_max_bytes,
        no_read=no_read,
        user_file=user_instructions_path(),
    )

    standing = found.standing()  # an unreadable memory file: a UsageError, exit 2
    lines = report(standing, _store(workspace, settings), settings, found.notes)
    for line in [*ignored, *([""] if ignored else []), *lines]:
        click.echo(line)


@memory_group.command("edit", cls=LatheCommand)
@workspace_option("Workspace whose project memory to edit (default: the current directory).")
@_SCOPE
def edit_command(workspace: Path, scope: str) -> None:
    """Open a memory file in $VISUAL or $EDITOR (one entry per `- ` line)."""
    import os
    import shlex
    import subprocess

    from lathe.errors import UsageError

    settings, _, _ = _settings(workspace)
    file = _store(workspace, settings).files[scope]  # type: ignore[index]
    editor = os.environ.get("VISUAL") or os.environ.get("EDITOR")
    if not editor:
        raise UsageError(f"set $VISUAL or $EDITOR to edit {file.path}, or open it yourself")
    file.path.parent.mkdir(parents=True, exist_ok=True)
    file.path.touch()
    try:
        done = subprocess.run([*shlex.split(editor), str(file.path)], check=False)
    except OSError as exc:
        raise UsageError(f"the editor {editor!r} could not start: {exc.strerror}") from None
    if done.returncode != 0:
        click.echo(f"lathe: the editor {editor!r} exited with status {done.returncode}", err=True)
        raise SystemExit(1)
    size = file.size()
    if size > settings.memory_max_bytes:
        click.echo(
            f"lathe: {file.path} holds {size:,} bytes, over memory.memory_max_bytes "
            f"({settings.memory_max_bytes:,}): the agent cannot add to it until it is shorter",
            err=True,
        )


@memory_group.command("clear", cls=LatheCommand)
@workspace_option("Workspace whose project memory to clear (default: the current directory).")
@_SCOPE
@click.option("--yes", "-y", is_flag=True, help="Clear without asking.")
def clear_command(workspace: Path, scope: str, yes: bool) -> None:
    """Remove every entry of a memory file (asks first, unless --yes)."""
    from lathe.plural import plural

    settings, _, _ = _settings(workspace)
    store = _store(workspace, settings)
    file = store.files[scope]  # type: ignore[index]
    count = len(file.entries())
    if count == 0:
        click.echo(f"the {scope} memory is already empty ({file.path})")
        return
    what = f"{plural(count, 'entry', 'entries')} from the {scope} memory ({file.path})"
    try:
        agreed = yes or click.confirm(f"Remove {what}?")
    except click.Abort:  # no terminal and no answer (or Ctrl-C): a script without --yes
        click.echo("lathe: nothing was cleared: no answer came (--yes clears without asking)",
                   err=True)  # fmt: skip
        raise SystemExit(1) from None
    if not agreed:
        click.echo("nothing was cleared")
        return
    store.clear(scope)  # type: ignore[arg-type]
    click.echo(f"removed {what}")
