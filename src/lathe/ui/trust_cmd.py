"""`lathe trust`: show what a project file asks of this machine, and trust it (or not)."""

from __future__ import annotations

from pathlib import Path

import click

from lathe.ui.options import LatheCommand, workspace_option


@click.command("trust", cls=LatheCommand)
@workspace_option("Workspace whose project file to trust (default: the current directory).")
@click.option("--revoke", is_flag=True, help="Forget the trust given to this project file.")
def trust_command(workspace: Path, revoke: bool) -> None:
    """Show the project file's settings that reach outside the sandbox (hooks, approval
    full, allow rules, sandbox and provider settings) and trust them as they are now.
    A later change to them needs trust again."""
    from lathe.config import load_config
    from lathe.config.loader import find_project_file
    from lathe.config.trust import project_settings, trust
    from lathe.home import lathe_home

    if revoke:
        file = find_project_file(workspace)
        if file is None:
            raise click.UsageError(f"there is no project file for {workspace.resolve()}")
        from lathe.config.trust import revoke as forget

        done = forget(lathe_home(), file)
        click.echo(f"{'revoked trust in' if done else 'nothing was trusted for'} {file}")
        return
    loaded = load_config(workspace)  # a UsageError: one line, exit 2 (LatheGroup.main)
    settings = project_settings(loaded)
    if settings is None:
        if loaded.project_file is None:
            click.echo(f"nothing to trust: {workspace.resolve()} has no project file")
        else:
            click.echo(
                f"nothing to trust: {loaded.project_file} sets nothing that reaches outside "
                "the sandbox"
            )
        return
    click.echo(f"{settings.file} sets:")
    for line in settings.describe():
        click.echo(f"  {line}")
    trust(lathe_home(), settings)
    click.echo("trusted as shown; a change to these settings will ask again")
