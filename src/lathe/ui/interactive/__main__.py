"""`python -m lathe.ui.interactive`: the interactive session, until `lathe` itself is
wired to `run_interactive`. Takes the options `lathe` will pass."""

from __future__ import annotations

import sys
from pathlib import Path

import click


@click.command(context_settings={"help_option_names": ["-h", "--help"]})
@click.option("--model", "-m", help="Model to use (env LATHE_MODEL).")
@click.option("--base-url", help="OpenAI-compatible endpoint (env LATHE_BASE_URL).")
@click.option(
    "-C", "--cwd", "workspace", type=click.Path(file_okay=False, path_type=Path), default="."
)
@click.option("--continue", "continue_session", is_flag=True, help="Continue the latest session.")
@click.option("--resume", metavar="ID", help="Resume the session with this id (or prefix).")
@click.option(
    "--approval", type=click.Choice(["read-only", "ask", "auto", "full"]), help="Approval mode."
)
@click.option("--verify", metavar="CMD", help="Command lathe runs to check the work.")
@click.option("--max-turns", type=click.IntRange(min=1), help="Model turns per message.")
def main(
    model: str | None,
    base_url: str | None,
    workspace: Path,
    continue_session: bool,
    resume: str | None,
    approval: str | None,
    verify: str | None,
    max_turns: int | None,
) -> None:
    from lathe.ui.interactive.app import InteractiveOptions, run_interactive

    options = InteractiveOptions(
        workspace=workspace,
        model=model,
        base_url=base_url,
        continue_session=continue_session,
        resume=resume,
        approval=approval,
        verify=verify,
        max_turns=max_turns,
    )
    sys.exit(run_interactive(options))


if __name__ == "__main__":
    main(prog_name="lathe")
