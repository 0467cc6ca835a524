"""Where a task's own commands run: never with more rights than lathe's run gave them.

The verify command runs the agent's code. Scoring it ran it with the batch's whole
environment, the model's key included, and outside the sandbox lathe's run had kept it
in, so code the run could not make leak the key did at scoring. Now it runs in the
executor that run had, built the same way (`ui.safety.build_safety`, from the config and
`lathe run` options the run started with): the run's sandbox, its rules and network,
or, where the run had none (`--approval full`, a sandbox that cannot start here), lathe's
local executor; always the environment commands get (no keys, `exec.env`) and nothing
left running after it (the sandbox's end, or the supervisor).

The setup command runs before the agent, on the task's own files: the task author's, so
not sandboxed (it often installs what the task needs, over the network), but with the
environment commands get and under the supervisor all the same.

Either way this process is made non-dumpable first, as `lathe run` makes itself
(`ui.safety.hide_own_environment`): a command it runs unsandboxed could otherwise read
the key from `/proc/<its pid>/environ`.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import TYPE_CHECKING

from lathe.batch.task_run import RunSettings, run_arguments

if TYPE_CHECKING:
    from lathe.exec.base import Executor
    from lathe.ui.setup import RunSetup


def run_setup(settings: RunSettings, workspace: Path) -> RunSetup:
    """The setup of the `lathe run` a task's copy in `workspace` gets, prepared as that
    run prepares it. A `UsageError` for what that run would stop on: an option it
    refuses (a `--lathe-arg`), a setting."""
    import click

    from lathe.errors import UsageError
    from lathe.ui.cli import run, run_options
    from lathe.ui.options import click_message
    from lathe.ui.setup import prepare

    arguments = run_arguments(settings, workspace, verify="true", timeout=60.0)
    try:
        with run.make_context("lathe run", [*arguments, "check"]) as context:
            values = dict(context.params)
    except click.ClickException as exc:
        raise UsageError(click_message(exc)) from None
    except click.exceptions.Exit:  # --help: it would print help, the task unrun
        raise UsageError(
            "--help prints `lathe run`'s help instead of running a task; leave it out"
        ) from None
    for name in ("task", "as_json", "prompt_command"):
        values.pop(name)
    return prepare(run_options(True, **values))


def setup_executor(settings: RunSettings, workspace: Path) -> Executor:
    """The executor of the setup command of a task copied to `workspace`: unsandboxed,
    with the environment `lathe run` gives commands there."""
    from lathe.exec.local import LocalExecutor
    from lathe.ui.safety import hide_own_environment, key_variables

    setup = run_setup(settings, workspace)
    hide_own_environment()
    return LocalExecutor(
        hide_env=key_variables(setup), keep_env=setup.loaded.config.permissions.env_passthrough
    )


def verify_executor(settings: RunSettings, started_from: Path, workspace: Path) -> Executor:
    """The executor lathe's run had for commands, for `workspace`: the run's config is
    read from `started_from`, the tree the run started with (not the agent's work: a
    config it wrote there is none the run had)."""
    from lathe.ui.safety import build_safety

    setup = dataclasses.replace(run_setup(settings, started_from), workspace=workspace)
    # build_safety hides this process's environment too (`hide_own_environment`).
    return build_safety(setup, None, approver=None, emit=_ignored, start_mcp=False).executor


def _ignored(event: object) -> None:
    """The notices of building the executor are the run's, told there already."""
