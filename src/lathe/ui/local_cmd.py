"""`lathe local install|start|stop|status`: the terminal face of `lathe.local`."""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, assert_never

import click

from lathe.local.models import DEFAULT_MODEL, MODELS
from lathe.plural import plural
from lathe.ui.options import LatheGroup

if TYPE_CHECKING:
    from lathe.local.server import Replaced, WarmServer

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

    from lathe.errors import LatheError
    from lathe.local import install as inst

    console = Console(stderr=True)
    model = MODELS[model_name]
    console.print(f"Installing local model [bold]{model.title}[/] ({model.size / 1e9:.2f} GB)")
    started = time.monotonic()
    try:
        if console.is_terminal:
            _, model_file = _install_with_bars(console, model_name)
        else:  # a log or a pipe: bars would show once, at the end, already full
            _, model_file = inst.install_all(model_name, PlainProgress(_stderr_line))
    except LatheError as exc:
        _fail(str(exc))
    console.print(
        f"[green]Ready[/] in {time.monotonic() - started:.0f}s: {model_file}\n"
        f'Run `lathe run --model local/{model_name} "..."`, or `lathe local start` to keep '
        "the server warm between runs."
    )


def _install_with_bars(console: Any, model_name: str) -> tuple[Path, Path]:
    from rich.progress import BarColumn, Progress, TaskID, TextColumn, TimeElapsedColumn

    from lathe.local import install as inst

    columns: list[Any] = [
        TextColumn("{task.fields[title]:<20}"),
        BarColumn(),
        TextColumn("{task.description}"),
        TimeElapsedColumn(),
    ]
    tasks: dict[str, TaskID] = {}
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

        return inst.install_all(model_name, report)


def _stderr_line(text: str) -> None:
    click.echo(text, err=True)


class PlainProgress:
    """Install progress as plain lines, for a log or a pipe: a line when a step starts
    or changes what it does, at each 5% further, and at least every 30 s while it
    advances, each with the time since the install began."""

    def __init__(self, echo: Callable[[str], None], every_s: float = 30.0) -> None:
        self._echo = echo
        self._every_s = every_s
        self._started = time.monotonic()
        self._last: dict[str, tuple[str, int, float]] = {}

    def __call__(self, event: Any) -> None:
        now = time.monotonic()
        percent = min(100, int(100 * event.completed / event.total)) if event.total else 0
        doing = event.description.split(": ")[0]  # not the file being compiled
        last = self._last.get(event.step)
        if last is not None and last[0] == doing:
            same_stretch = percent // 5 == last[1] // 5 and now - last[2] < self._every_s
            if last[1] == percent or same_stretch:
                return
        self._last[event.step] = (doing, percent, now)
        from lathe.agent.budget import duration

        title = _STEP_TITLES.get(event.step, event.step)
        self._echo(f"[{duration(now - self._started)}] {title}: {event.description} ({percent}%)")


@local.command("start")
@click.option("--model", "model_name", type=_MODEL_CHOICE, default=DEFAULT_MODEL, show_default=True)
@click.option(
    "--port", type=click.IntRange(0, 65535), default=None,
    help="Port on 127.0.0.1 (default: a free one).",
)  # fmt: skip
@click.option(
    "--threads",
    type=click.IntRange(min=1),
    default=None,
    help="Generation threads (default: the cores not busy now).",
)
@click.option(
    "--ctx-size",
    type=click.IntRange(min=1),
    default=8192,
    show_default=True,
    help="Context window of each slot, in tokens.",
)
@click.option(
    "--parallel",
    type=click.IntRange(min=1),
    default=1,
    show_default=True,
    help="Conversations served at once, each in its own slot (e.g. for lathe batch --workers N).",
)
@click.option(
    "--template",
    "template",
    default="lathe",
    show_default=True,
    help="Chat template: lathe, stock, or a path to a .jinja file.",
)
def start_cmd(
    model_name: str,
    port: int | None,
    threads: int | None,
    ctx_size: int,
    parallel: int,
    template: str,
) -> None:
    """Start a server that stays warm across lathe runs."""
    from lathe.errors import LatheError, UsageError
    from lathe.local.server import ServerOptions, start_warm
    from lathe.ui.signals import sigterm_as_ctrl_c, stopped_by

    if removed := _unreadable_record_removed():
        click.echo(removed[0].upper() + removed[1:] + ".")

    # Absolute, so the recorded server names the file whatever directory asks next.
    chat_template: Any = template if template in ("lathe", "stock") else Path(template).resolve()
    options = ServerOptions(
        ctx_size=ctx_size, threads=threads, parallel=parallel, chat_template=chat_template
    )
    # A kill or a closed terminal while the server loads stops it as Ctrl-C does: the
    # detached server is recorded only once healthy, so nothing else would stop it.
    came: list[int] = []
    try:
        with sigterm_as_ctrl_c(came):
            warm, reused = start_warm(
                model_name, options=options, port=port, on_replaced=_say_replaced
            )
    except LatheError as exc:
        _fail(str(exc), 2 if isinstance(exc, UsageError) else 1)
    except KeyboardInterrupt:
        _fail(*stopped_by(came))
    if reused:
        _refuse_other_options(
            warm,
            {
                "ctx_size": ("--ctx-size", warm.ctx_size, ctx_size),
                "parallel": ("--parallel", warm.parallel, parallel),
                "threads": ("--threads", warm.threads, threads),
                "template": ("--template", warm.chat_template, str(chat_template)),
            },
        )
    verb = "Already running" if reused else "Started"
    click.echo(
        f"{verb}: local/{warm.model} at {warm.base_url} ({_threads(warm)}, pid {warm.pid}, "
        f"log {warm.log})"
    )


def _say_replaced(old: WarmServer, why: Replaced) -> None:
    match why:
        case "not answering":
            click.echo(f"Stopped local/{old.model} (pid {old.pid}), which was not answering.")
        case "other model" | "other port":
            click.echo(f"Stopped local/{old.model} (pid {old.pid}).")
        case _:
            assert_never(why)


def _refuse_other_options(warm: Any, options: dict[str, tuple[str, Any, Any]]) -> None:
    """Fail when an option given on the command line (parameter name: flag, the running
    server's value, the one asked for) differs from what the running server has: reusing
    it would silently ignore the option. Options left at their defaults ask for nothing."""
    from click.core import ParameterSource

    context = click.get_current_context()
    differ = [
        (flag, running, asked)
        for name, (flag, running, asked) in options.items()
        if context.get_parameter_source(name) is not ParameterSource.DEFAULT
        and running is not None
        and running != asked
    ]
    if differ:
        has = " ".join(f"{flag} {running}" for flag, running, _ in differ)
        wants = " ".join(f"{flag} {asked}" for flag, _, asked in differ)
        _fail(
            f"local/{warm.model} is already running with {has}, not {wants}; run `lathe "
            "local stop`, then `lathe local start` again to apply the new options.",
            2,
        )


def _threads(warm: Any) -> str:
    """How much of the machine it uses: one thread where two cores were free is slow;
    and the window each conversation gets."""
    threads = "threads unknown" if warm.threads is None else plural(warm.threads, "thread")
    shown = [threads]
    if warm.parallel != 1:
        shown.append(plural(warm.parallel, "slot"))
    if warm.ctx_size is not None:
        shown.append(f"{warm.ctx_size}-token context" + (" each" if warm.parallel != 1 else ""))
    return ", ".join(shown)


def _unreadable_record_removed() -> str | None:
    """That the warm server's record was removed, lathe being unable to read it, and why."""
    from lathe.local.server import forget_unreadable_record

    forgotten = forget_unreadable_record()
    if forgotten is None:
        return None
    path, why = forgotten
    return f"removed {path}, which lathe cannot read ({why})"


@local.command("stop")
def stop_cmd() -> None:
    """Stop the warm server."""
    from lathe.local.server import stop_warm

    if removed := _unreadable_record_removed():
        click.echo(f"No warm server; {removed}.")
        return
    stopped = stop_warm()
    if stopped is None:
        click.echo("No warm server.")
        return
    warm = stopped.server
    match stopped.how:
        case "stopped":
            click.echo(f"Stopped local/{warm.model} (pid {warm.pid}).")
        case "exited":
            click.echo(
                f"local/{warm.model} (pid {warm.pid}) had already exited; removed its record."
            )
        case "pid reused":
            click.echo(
                f"local/{warm.model} (pid {warm.pid}) had already exited, and its pid is now "
                "another program's, left running; removed its record."
            )
        case _:
            assert_never(stopped.how)


@local.command("status")
def status_cmd() -> None:
    """Show the installed models and the warm server."""
    from lathe.local.install import find_server, is_verified, server_override_problem
    from lathe.local.models import model_path
    from lathe.local.server import recorded_warm

    binary = find_server()
    shown = server_override_problem() or "not installed (run `lathe local install`)"
    click.echo(f"llama-server: {binary or shown}")
    for model in MODELS.values():
        path = model_path(model)
        state = "installed" if is_verified(path, model.size, model.sha256) else "not installed"
        click.echo(f"local/{model.name}: {state} ({path})")
    removed = _unreadable_record_removed()
    warm = recorded_warm()
    if warm is None:
        click.echo("warm server: none" + (f"; {removed}" if removed else ""))
    elif not warm.answers():
        click.echo(
            f"warm server: local/{warm.model} at {warm.base_url} (pid {warm.pid}) is not "
            "answering; `lathe local start` replaces it, `lathe local stop` stops it"
        )
    else:
        age = time.time() - warm.started
        click.echo(
            f"warm server: local/{warm.model} at {warm.base_url} ({_threads(warm)}, pid "
            f"{warm.pid}, up {age / 60:.0f} min, log {warm.log})"
        )
