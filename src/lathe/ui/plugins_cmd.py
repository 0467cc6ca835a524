"""`lathe plugins`: the installed plugins (`lathe.plugins`), what each brings and whether
it loaded; a failing one says why, and the command exits 1."""

from __future__ import annotations

import sys

import click

from lathe.ui.options import LatheCommand


@click.command("plugins", cls=LatheCommand)
def plugins_command() -> None:
    """List the installed plugins: name, group, distribution and version, status."""
    from lathe.plugins import GROUPS, survey
    from lathe.ui.table import Column, print_report_table

    found = survey()
    if not found:
        click.echo(f"No plugins installed (entry-point groups: {', '.join(GROUPS)}).")
        return
    columns = [
        Column("NAME", flex=True, min_width=8),
        Column("GROUP"),
        Column("DISTRIBUTION", flex=True, min_width=8),
        Column("STATUS", flex=True, min_width=12),
    ]
    rows = [
        [
            p.name,
            p.group,
            p.distribution,
            f"{p.status} ({p.provides})" if p.provides and not p.problem else p.status,
        ]
        for p in found
    ]
    print_report_table(columns, rows)
    if any(p.problem for p in found):
        click.echo("\nA plugin that failed is skipped by every run; fix or uninstall it.")
        sys.exit(1)
