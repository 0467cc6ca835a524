"""`lathe local install|start|stop|status`: the terminal face of `lathe.local`."""

from __future__ import annotations

import sys
import time
from pathlib import Path
from typing import Any

import click

from lathe.local.models import DEFAULT_MODEL, MODELS
from lathe.ui.options import LatheGroup

_MODEL_CHOICE = click.Choice(sorted(MODELS), case_sensitive=False)
_STEP_TITLES = {
    "download": "Download model",
    "assemble": "Assemble + verify",
    "build": "Build llama-server",
}


def _fail(message: str, code: int = 1) -> None:
    click.echo(f"lathe: {message}", err=True)
    sys.exit(code)


@click.group("local", cls=LatheGroup)
def local() -> None:
    """Install and run the embedded local model (no API key, works offline)."""


@local.command("install")
@click.option(
    "--model",
    "model_name",
    type=_MODEL_CHOICE,
    default=DEFAULT_MODEL,
    show_default=True,
    help="Which local model to install.",
)
def install_cmd(model_name: str) -> None:
    """Download and verify the model, and build llama-server (~15 minutes, once)."""
    from rich.console import Console
    from rich.progress import (
        BarColumn,
        Progress,
        TaskID,
        TextColumn,
        TimeElapsedColumn,
    )

    from lathe.errors import LatheError
    from lathe.local import install as inst

    console = Console(stderr=True)
    model = MODELS[model_name]
    console.print(f"Installing local model [bold]{model.title}[/] ({model.size / 1e9:.2f} GB)")
    columns: list[Any] = [
        TextColumn("{task.fields[title]:<20}"),
        BarColumn(),
        TextColumn("{task.description}"),
        TimeElapsedColumn(),
    ]
    tasks: dict[str, TaskID] = {}
    started = time.monotonic()
    with Progress(*columns, console=console, transient=False) as bars:

        def report(event: inst.Progress) -> None:
            task = tasks.get(event.step)
            if task is None:
                task = tasks[event.step] = bars.add_task(
                    event.description,
                    title=_STEP_TITLES.get(event.step, event.step),
                    total=event.total,
                )
            bars.update(
                task, description=event.description, completed=event.completed, total=event.total
            )

        try:
            _, model_file = inst.install_all(model_name, report)
        except LatheError as exc:
            bars.stop()
            _fail(str(exc))
    console.print(
        f"[green]Ready[/] in {time.monotonic() - started:.0f}s: {model_file}\n"
        f'Run `lathe --model local/{model_name} run "..."`, or `lathe local start` to keep '
        "the server warm between runs."
    )


@local.command("start")
@click.option("--model", "model_name", type=_MODEL_CHOICE, default=DEFAULT_MODEL, show_default=True)
@click.option("--port", type=int, default=None, help="Port on 127.0.0.1 (default: a free one).")
@click.option(
    "--threads",
    type=click.IntRange(min=1),
    default=None,
    help="Generation threads (default: the cores not busy now).",
)
@click.option("--ctx-size", type=int, default=8192, show_default=True, help="Context window.")
@click.option(
    "--template",
    "template",
    default="lathe",
    show_default=True,
    help="Chat template: lathe, stock, or a path to a .jinja file.",
)
def start_cmd(
    model_name: str, port: int | None, threads: int | None, ctx_size: int, template: str
) -> None:
    """Start a server that stays warm across lathe runs."""
    from lathe.errors import LatheError, UsageError
    from lathe.local.server import ServerOptions, start_warm

    chat_template: Any = template if template in ("lathe", "stock") else Path(template)
    options = ServerOptions(ctx_size=ctx_size, threads=threads, chat_template=chat_template)
    try:
        warm, reused = start_warm(model_name, options=options, port=port)
    except LatheError as exc:
        _fail(str(exc), 2 if isinstance(exc, UsageError) else 1)
    verb = "Already running" if reused else "Started"
    click.echo(f"{verb}: local/{warm.model} at {warm.base_url} (pid {warm.pid}, log {warm.log})")


@local.command("stop")
def stop_cmd() -> None:
    """Stop the warm server."""
    from lathe.local.server import stop_warm

    warm = stop_warm()
    click.echo(f"Stopped local/{warm.model} (pid {warm.pid})." if warm else "No warm server.")


@local.command("status")
def status_cmd() -> None:
    """Show the installed models and the warm server."""
    from lathe.local.install import find_server, is_verified
    from lathe.local.models import model_path
    from lathe.local.server import read_warm

    binary = find_server()
    click.echo(f"llama-server: {binary or 'not installed (run `lathe local install`)'}")
    for model in MODELS.values():
        path = model_path(model)
        state = "installed" if is_verified(path, model.size, model.sha256) else "not installed"
        click.echo(f"local/{model.name}: {state} ({path})")
    warm = read_warm()
    if warm is None:
        click.echo("warm server: none")
    else:
        age = time.time() - warm.started
        click.echo(
            f"warm server: local/{warm.model} at {warm.base_url} (pid {warm.pid}, "
            f"up {age / 60:.0f} min, log {warm.log})"
        )
