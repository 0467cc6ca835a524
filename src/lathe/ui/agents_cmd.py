"""`lathe agents list`: the subagent profiles a `task` call may name here
(`lathe.subagents.profiles`), where each comes from, and the files that cannot be read
or are refused (a `tools:` name that neither lathe nor a plugin that loads has)."""

from __future__ import annotations

import sys
from pathlib import Path

import click

from lathe.ui.options import LatheCommand, LatheGroup, workspace_option


@click.group("agents", cls=LatheGroup)
def agents_group() -> None:
    """Subagent profiles: what kind of child a task call starts."""


@agents_group.command("list", cls=LatheCommand)
@workspace_option("Workspace whose .lathe/agents/ applies (default: the current directory).")
def list_command(workspace: Path) -> None:
    """List the profiles: name, where it comes from, tools, approval, description."""
    from lathe.plugins import load_tool_plugins
    from lathe.subagents.profiles import find_profiles
    from lathe.tools.builtin import OWN_TOOL_NAMES, known_tool_names
    from lathe.ui.table import Column, print_report_table

    # What a run would know: a plugin that fails is `lathe plugins`'s to tell.
    plugins = [t.name for t in load_tool_plugins(lambda problem: None, set(OWN_TOOL_NAMES))]
    found = find_profiles(workspace.expanduser().resolve(), known_tools=known_tool_names(plugins))
    columns = [
        Column("NAME", min_width=6),
        Column("FROM"),
        Column("TOOLS", flex=True, min_width=8),
        Column("APPROVAL"),
        Column("DESCRIPTION", flex=True, min_width=16),
    ]
    rows = [
        [
            p.name,
            str(p.path) if p.path else p.origin,
            ", ".join(p.tools) if p.tools is not None else "all",
            p.approval or "the run's",
            p.description,
        ]
        for p in sorted(found.by_name.values(), key=lambda p: p.name)
    ]
    print_report_table(columns, rows)
    if found.problems:
        click.echo("\nThese profile files cannot be used; task calls cannot name them:", err=True)
        for problem in found.problems:
            click.echo(f"  {problem}", err=True)
        sys.exit(1)
