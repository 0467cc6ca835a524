"""`lathe batch TASKS --out RUN_DIR`: lathe over many tasks (see `lathe.batch`), with a
progress display (plain lines without a terminal) and a summary table; and
`lathe batch report RUN_DIR`, the HTML report."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import click

from lathe.ui.options import LatheGroup


class _BatchGroup(LatheGroup):
    """`lathe batch TASKS ...` runs a batch; `lathe batch report ...` is the report."""

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        if args and args[0] not in self.commands and args[0] not in ("-h", "--help"):
            args = ["run", *args]
        return super().parse_args(ctx, args)


def _duration(ctx: Any, param: Any, value: str | None) -> float | None:
    return _parsed(value, param, "parse_duration")


def _dollars(ctx: Any, param: Any, value: str | None) -> float | None:
    return _parsed(value, param, "parse_dollars")


def _parsed(value: str | None, param: Any, parser: str) -> float | None:
    from lathe.config import schema

    if value is None:
        return None
    try:
        return float(getattr(schema, parser)(value))
    except ValueError as exc:
        raise click.BadParameter(str(exc), param=param) from None


@click.group("batch", cls=_BatchGroup, invoke_without_command=False)
def batch_group() -> None:
    """Run lathe over many tasks and score each by its own verify command.

    `lathe batch TASKS --out RUN_DIR` runs them (again: resumes); `lathe batch report
    RUN_DIR` writes the HTML report."""


@batch_group.command("run")
@click.argument("tasks", type=click.Path(exists=True, path_type=Path))
@click.option(
    "--out",
    "out",
    required=True,
    type=click.Path(file_okay=False, path_type=Path),
    help="Run folder: results.jsonl, manifest.json, diffs, transcripts.",
)
@click.option(
    "--workers",
    default=1,
    show_default=True,
    type=click.IntRange(min=1),
    help="Tasks running at once.",
)
@click.option("--model", help="Model for every task (as `lathe run --model`).")
@click.option("--base-url", help="OpenAI-compatible endpoint (as `lathe run --base-url`).")
@click.option("--max-turns", type=click.IntRange(min=1), help="Model turns per task.")
@click.option(
    "--attempts",
    type=click.IntRange(min=1, max=20),
    help="Attempts per task (lathe starts over from the original files).",
)
@click.option(
    "--max-cost", callback=_dollars, help="Dollars one task may spend (lathe stops it there)."
)
@click.option(
    "--max-wall",
    callback=_duration,
    help="Wall time one task may take, e.g. 10m (lathe stops it there).",
)
@click.option(
    "--max-total-cost",
    callback=_dollars,
    help="Dollars the whole batch may spend; then no new task starts.",
)
@click.option(
    "--max-total-wall",
    callback=_duration,
    help="Wall time for the whole batch, e.g. 2h; then no new task starts.",
)
@click.option(
    "--retry-errors",
    is_flag=True,
    help="Run again the tasks that ended in an infrastructure or provider error.",
)
@click.option(
    "--force", is_flag=True, help="Add to a run folder made with another task list or model."
)
@click.option(
    "--keep", is_flag=True, help="Keep each task's working copy (its path is in the results)."
)
@click.option(
    "--lathe-arg",
    "lathe_args",
    multiple=True,
    metavar="ARG",
    help="An argument for every `lathe run`, e.g. --lathe-arg=--deny "
    "--lathe-arg='edit(tests/**)' (repeatable).",
)
@click.option(
    "--executor",
    type=click.Choice(["local", "ray"]),
    default="local",
    show_default=True,
    help="Run the tasks here, or as Ray tasks (`pip install 'lathe[ray]'`).",
)
@click.option(
    "--ray-address",
    envvar="RAY_ADDRESS",
    help="An existing Ray cluster (default: RAY_ADDRESS, else a local Ray).",
)
@click.option(
    "--task-cpus",
    type=click.FloatRange(min=0.1),
    default=1.0,
    show_default=True,
    help="CPUs Ray reserves for each task.",
)
def run_batch(tasks: Path, out: Path, workers: int, **values: Any) -> None:
    """Run every task of TASKS (a folder of task folders, or a JSONL file) in its own
    fresh copy; results land in RUN_DIR as each task ends. Run the same command again to
    resume: finished tasks are skipped, unfinished ones run. Exits 3 when a task ended in
    an error (not measured), 1 when the batch stopped early."""
    from lathe.batch.driver import Batch, BatchOptions
    from lathe.batch.results import masked_config
    from lathe.batch.task_run import RunSettings
    from lathe.batch.tasks import load_tasks, shown

    task_list = load_tasks(tasks, run_folder=out.resolve())
    settings = RunSettings(
        model=values["model"],
        base_url=values["base_url"],
        max_turns=values["max_turns"],
        attempts=values["attempts"],
        max_cost=None if values["max_cost"] is None else f"{values['max_cost']:g}",
        max_wall_s=values["max_wall"],
        lathe_args=tuple(values["lathe_args"]),
        keep_workspace=values["keep"],
        run_folder=str(out.resolve()),
    )
    model = _resolved_model(settings, values["max_total_cost"])
    options = BatchOptions(
        tasks=task_list,
        source=shown(str(tasks.resolve())),  # the manifest is UTF-8; a path need not be
        out=out.resolve(),
        settings=settings,
        model=model,
        retry_errors=values["retry_errors"],
        force=values["force"],
        max_total_cost=values["max_total_cost"],
        max_total_wall_s=values["max_total_wall"],
        config=masked_config(Path.cwd()),
        executor_name=values["executor"],
    )
    executor = _executor(values, workers)
    face = _face(workers)
    batch = Batch(options, executor, face)
    from lathe.ui.signals import sigterm_as_ctrl_c, stopped_by

    terminated: list[int] = []
    try:
        with sigterm_as_ctrl_c(terminated):
            lines = batch.run()
    except KeyboardInterrupt:
        face.close()
        said, code = stopped_by(terminated)
        click.echo(f"lathe: {said}; run the same command to resume ({out})", err=True)
        sys.exit(code)
    from lathe.plural import plural

    face.close()
    order = [t.id for t in task_list]
    _summary(lines, order)
    if batch.stop_reason:
        click.echo(f"lathe: stopped early: {batch.stop_reason}", err=True)
        sys.exit(1)
    errors = sum(lines[i].get("status") == "error" for i in order if i in lines)
    if errors:
        # Unsolved tasks are the measurement; a task that errored was not measured.
        click.echo(
            f"lathe: {errors} of {plural(len(order), 'task')} ended in an error (not "
            "measured); run the same command with --retry-errors to run them again",
            err=True,
        )
        sys.exit(3)


@batch_group.command("report")
@click.argument("run_dir", type=click.Path(exists=True, file_okay=False, path_type=Path))
@click.option(
    "--compare",
    type=click.Path(exists=True, file_okay=False, path_type=Path),
    help="Another run folder to show beside this one, task by task.",
)
@click.option(
    "-o",
    "--output",
    type=click.Path(dir_okay=False, path_type=Path),
    help="Where to write the HTML (default: RUN_DIR/report.html).",
)
def report(run_dir: Path, compare: Path | None, output: Path | None) -> None:
    """Write a self-contained HTML report of RUN_DIR: solve rates, time and token
    distributions, and every task with its diff and transcript."""
    from lathe.batch.report import write_report

    def warn(problem: str) -> None:
        click.echo(f"lathe: {problem}", err=True)

    written = write_report(run_dir, compare=compare, output=output, warn=warn)
    click.echo(str(written))


def _resolved_model(settings: Any, max_total_cost: float | None) -> str:
    """The model id every task will use; a config or key problem, or a cost budget for
    a model with no prices (never reached: its cost is unknown, not zero), stops the
    batch here, before any task runs."""
    import shutil
    import tempfile

    from lathe.ui.setup import RunOptions, prepare

    scratch = Path(tempfile.mkdtemp(prefix="lathe-batch-"))
    try:
        setup = prepare(
            RunOptions(
                workspace=scratch,
                model=settings.model,
                base_url=settings.base_url,
                max_turns=settings.max_turns,
                max_cost=settings.max_cost,
            )
        )
        if max_total_cost is not None and not setup.model.prices.known:
            from lathe.errors import UsageError

            raise UsageError(
                f"--max-total-cost needs the model's prices, and there are none for "
                f"{setup.model.name or setup.model.model_id} in the model catalog: give them in "
                "its [models] table (provider, input_price and output_price), or bound the "
                "batch with --max-total-wall instead"
            )
        if settings.lathe_args:
            _check_lathe_args(settings, scratch)
        return str(setup.model.model_id)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


def _check_lathe_args(settings: Any, scratch: Path) -> None:
    """Parse and load every task's `lathe run` options as it will: a --lathe-arg that
    each task would refuse, or one the batch sets itself, stops the batch here, not as
    an error in every task."""
    from lathe.batch.task_commands import run_setup
    from lathe.errors import UsageError

    if (problem := _batch_own(settings.lathe_args)) is not None:
        raise UsageError(f"--lathe-arg: {problem}")
    try:
        run_setup(settings, scratch)
    except UsageError as exc:
        raise UsageError(f"--lathe-arg: {exc}") from None


# What a --lathe-arg may not give beside the options the batch gives every task
# (`task_run.BATCH_OPTIONS`), by parameter: another session than each task's own.
_OWN_SESSION = {
    "continue_last": "each task starts a session of its own; leave it out",
    "resume": "each task starts a session of its own; leave it out",
}


def _batch_own(lathe_args: tuple[str, ...]) -> str | None:
    """What is wrong with `lathe_args` giving an option the batch sets itself, as that
    option or as the config key it sets (`-c`); None when none does (an option `lathe
    run` refuses is `run_setup`'s to say)."""
    from click.core import ParameterSource

    from lathe.batch.task_run import BATCH_OPTIONS
    from lathe.ui.cli import run

    try:
        with run.make_context("lathe run", list(lathe_args), resilient_parsing=True) as context:
            given = {
                name: value
                for name, value in context.params.items()
                if context.get_parameter_source(name) == ParameterSource.COMMANDLINE
            }
    except click.ClickException:
        return None
    if "task" in given:
        return (
            f"a task is given ({' '.join(given['task'])!r}), and each task of the batch is "
            "its TASK.md (or its `task`); leave it out"
        )
    named = {option: param for param in run.params for option in param.opts}
    refused = {named[o.option].name: o.instead for o in BATCH_OPTIONS if o.option != "-c"}
    for param in run.params:
        why = refused.get(param.name) or _OWN_SESSION.get(str(param.name))
        if why is not None and param.name in given:
            return f"{'/'.join(param.opts)} is set by lathe batch for every task: {why}"
    for override in given.get("overrides") or ():
        for option in BATCH_OPTIONS:
            if option.key is not None and _sets(str(override), option.key):
                return f"-c {option.key} is set by lathe batch for every task: {option.instead}"
    return None


def _sets(override: str, key: str) -> bool:
    """Whether the `-c` `override` (KEY=VALUE, as the config loader reads it) sets `key`:
    itself, however it is spelled (`"agent" . max_turns`), or inside a table given whole
    (`agent={max_turns=1}`)."""
    import tomllib

    from lathe.config.keys import parse_key
    from lathe.errors import UsageError

    text, _, value = override.partition("=")
    try:
        path = parse_key(text.strip())
    except UsageError:  # not a key: `run_setup` says so
        return False
    wanted = parse_key(key)
    if path == wanted[: len(path)] and len(path) < len(wanted):
        try:
            table = tomllib.loads(f"v = {value}")["v"]
        except tomllib.TOMLDecodeError:
            return False
        for part in wanted[len(path) :]:
            if not isinstance(table, dict) or part not in table:
                return False
            table = table[part]
        return True
    return path == wanted


def _executor(values: dict[str, Any], workers: int) -> Any:
    if values["executor"] == "ray":
        from lathe.batch.ray_executor import RayExecutor

        return RayExecutor(workers, address=values["ray_address"], task_cpus=values["task_cpus"])
    from lathe.batch.executors import LocalPool

    return LocalPool(workers)


def _face(workers: int) -> Any:
    from lathe.ui.batch_progress import LiveProgress, PlainProgress

    return LiveProgress(workers) if sys.stderr.isatty() else PlainProgress()


def _summary(lines: dict[str, dict[str, Any]], order: list[str]) -> None:
    from lathe.ui.batch_progress import summary_table

    click.echo(summary_table([lines[i] for i in order if i in lines], total=len(order)))
