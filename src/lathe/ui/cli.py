"""The `lathe` command line. Heavy modules are imported inside commands so that
`lathe --help` and `lathe --version` start fast."""

from __future__ import annotations

import sys
from pathlib import Path

import click

from lathe import __version__

EXIT_OK, EXIT_NOT_ACHIEVED, EXIT_USAGE, EXIT_PROVIDER, EXIT_INTERRUPTED = 0, 1, 2, 3, 130


@click.group(invoke_without_command=True, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="lathe")
@click.pass_context
def cli(ctx: click.Context) -> None:
    """lathe: a coding agent that reads, patches, runs and verifies real code."""
    if ctx.invoked_subcommand is None:
        click.echo(ctx.get_help())


@cli.command()
@click.argument("task", required=False)
@click.option("--model", "-m", help="Model to use (env LATHE_MODEL).")
@click.option(
    "--base-url", help="OpenAI-compatible endpoint (env LATHE_BASE_URL, OPENAI_BASE_URL)."
)
@click.option(
    "-C",
    "--cwd",
    "workspace",
    type=click.Path(file_okay=False, path_type=Path),
    default=".",
    help="Workspace directory (default: the current directory).",
)
@click.option("--max-turns", type=click.IntRange(min=1), help="Stop after this many model turns.")
@click.option("--verify", "verify", metavar="CMD", help="Command lathe runs to check the work.")
@click.option("--json", "as_json", is_flag=True, help="Print every event as a JSON line on stdout.")
def run(
    task: str | None,
    model: str | None,
    base_url: str | None,
    workspace: Path,
    max_turns: int | None,
    verify: str | None,
    as_json: bool,
) -> None:
    """Run TASK headless: progress on stderr, the final answer on stdout."""
    from lathe.ui.headless import RunRequest, run_headless

    if not task or not task.strip():
        if not sys.stdin.isatty():
            task = sys.stdin.read()
        if not task or not task.strip():
            raise click.UsageError('give the task as an argument: lathe run "fix the failing test"')
    request = RunRequest(
        task=task,
        workspace=workspace,
        model=model,
        base_url=base_url,
        max_turns=max_turns,
        verify=verify,
        as_json=as_json,
    )
    sys.exit(run_headless(request))


def main() -> None:
    cli(prog_name="lathe")
