"""The `lathe` command line. Subcommands and heavy modules are imported only when used,
so that `lathe --help` and `lathe --version` start fast."""

from __future__ import annotations

import gc
import importlib
import sys

import click

from lathe import __version__
from lathe.ui.options import LatheGroup, remember_top_level, workspace_option

_LAZY_COMMANDS = {
    "sessions": ("lathe.ui.sessions_cmd", "sessions", "List, show, export and fork sessions."),
    "config": ("lathe.ui.config_cmd", "config_group", "Show, locate and create config files."),
    "undo": ("lathe.ui.checkpoints_cmd", "undo_command", "Undo the agent's last change."),
    "checkpoints": (
        "lathe.ui.checkpoints_cmd",
        "checkpoints_group",
        "List and restore workspace checkpoints.",
    ),
    "local": ("lathe.ui.local_cmd", "local", "Install and run the embedded local model."),
    "stats": ("lathe.ui.stats_cmd", "stats_command", "Tokens, cost, runs and tool failures."),
    "doctor": ("lathe.ui.doctor_cmd", "doctor_command", "Check config, key, endpoint and tools."),
    "mcp": ("lathe.ui.mcp_cmd", "mcp_group", "MCP servers: list, test, import; serve lathe."),
    "plugins": (
        "lathe.ui.plugins_cmd",
        "plugins_command",
        "List installed plugins: tools, providers, hooks, executors.",
    ),
    "trust": (
        "lathe.ui.trust_cmd",
        "trust_command",
        "Review and trust a project file's hooks and sandbox settings.",
    ),
    "agents": ("lathe.ui.agents_cmd", "agents_group", "List the subagent profiles."),
    "serve": ("lathe.ui.serve_cmd", "serve_command", "Serve sessions over HTTP, with a web page."),
    "batch": ("lathe.ui.batch_cmd", "batch_group", "Run lathe over many tasks; report on a run."),
    "attach": ("lathe.ui.attach_cmd", "attach_command", "Attach to a session lathe serve runs."),
    "memory": (
        "lathe.ui.memory_cmd",
        "memory_group",
        "Show the instruction files read and the memory kept; edit or clear it.",
    ),
    "schema": (
        "lathe.ui.schema_cmd",
        "schema_group",
        "Print the JSON Schema of lathe's event stream.",
    ),
}


class _LazyGroup(LatheGroup):
    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted([*super().list_commands(ctx), *_LAZY_COMMANDS])

    def get_command(self, ctx: click.Context, name: str) -> click.Command | None:
        if name in _LAZY_COMMANDS:
            module, attribute, _ = _LAZY_COMMANDS[name]
            command = getattr(importlib.import_module(module), attribute)
            command.name = name
            return command
        return super().get_command(ctx, name)

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        rows = [(name, cmd.get_short_help_str(70)) for name, cmd in self.commands.items()]
        rows += [(name, help_text) for name, (_, _, help_text) in _LAZY_COMMANDS.items()]
        with formatter.section("Commands"):
            formatter.write_dl(sorted(rows))


def _session_id_given(ctx: click.Context, param: click.Parameter, value: str | None):
    """An empty --resume would start a new session, not resume one."""
    if value is not None and not value.strip():
        raise click.BadParameter("give a session id; `lathe sessions list` shows them")
    return value


def _rules_given(ctx: click.Context, param: click.Parameter, value: tuple[str, ...]):
    """A rule that cannot do what it says, as far as the rule alone tells (`Edit(...)`
    denied nothing), refused as a config file's is: before the run starts."""
    if not value:
        return value  # nothing to import the config package for
    from lathe.config.permission_rules import rule_problem
    from lathe.errors import UsageError

    for rule in value:
        if problem := rule_problem(rule):
            raise UsageError(problem)
    return value


def _model_given(ctx: click.Context, param: click.Parameter, value: str | None):
    """`--model ""` (a variable that was not set) would be sent as the model id."""
    from lathe.errors import UsageError

    if value is not None and not value.strip():
        raise UsageError("--model: empty model name; give one, or leave --model out")
    return value


def _endpoint_given(ctx: click.Context, param: click.Parameter, value: str | None):
    """A URL lathe can send requests to: without it, retries of a request that can never
    go out look like an outage (exit 3 after 15 s, not 2 at once)."""
    if value is None:  # click asks for every option: the schema's import is ~150 ms
        return value
    from lathe.config.schema import http_url_problem
    from lathe.errors import UsageError

    problem = http_url_problem(value)
    if problem:
        raise UsageError(f"--base-url{' ' + value if value.strip() else ''}: {problem}")
    return value


def _agent_options(func):
    options = [
        click.option(
            "--model",
            "-m",
            callback=_model_given,
            help="Model name, or provider/id (env LATHE_MODEL).",
        ),
        click.option(
            "--base-url",
            callback=_endpoint_given,
            help="The endpoint requests go to: an OpenAI-compatible one for a model the catalog "
            "does not list; for a catalog model, a server of its provider's API (env "
            "LATHE_BASE_URL).",
        ),
        click.option(
            "--profile",
            metavar="NAME",
            help="Model profile to use, e.g. small for a 7B model (see `lathe config show`).",
        ),
        workspace_option("Workspace directory (default: the current directory)."),
        click.option("--max-turns", type=click.IntRange(min=1), help="Stop after N model turns."),
        click.option("--verify", metavar="CMD", help="A command lathe runs to check the work."),
        click.option(
            "--max-cost",
            metavar="USD",
            help="Stop a run once its model replies cost this many US dollars (catalog "
            "prices); continue it with --continue and a larger budget.",
        ),
        click.option(
            "--max-tokens",
            metavar="N",
            help="Stop a run once it has used N tokens (input, output and cache; e.g. 50k).",
        ),
        click.option(
            "--timeout",
            metavar="DURATION",
            help="Stop a run after this much wall time, e.g. 90s, 10m, 1h30m.",
        ),
        click.option(
            "--approval",
            type=click.Choice(["read-only", "ask", "auto", "full"]),
            help="What runs without asking (default: auto headless, ask interactive). "
            "full turns the sandbox off: see the end of `lathe run --help`.",
        ),
        click.option(
            "--sandbox",
            type=click.Choice(["bubblewrap", "gvisor", "container"]),
            help="The sandbox commands run in (default: bubblewrap); gvisor runs them under "
            "gVisor's runsc, a stronger boundary with a slower start; container, in the "
            "docker or podman container of the [container] config table.",
        ),
        click.option(
            "--allow",
            multiple=True,
            metavar="RULE",
            callback=_rules_given,
            help="Allow rule, e.g. 'bash(npm test)'.",
        ),
        click.option(
            "--deny",
            multiple=True,
            metavar="RULE",
            callback=_rules_given,
            help="Deny rule, e.g. 'read(.env)'.",
        ),
        click.option(
            "--continue", "continue_last", is_flag=True, help="Continue the latest session here."
        ),
        click.option(
            "--resume",
            metavar="ID",
            callback=_session_id_given,
            help="Resume a session by id (a prefix is enough).",
        ),
        click.option(
            "--trust-project",
            is_flag=True,
            help="Trust the project file's hooks and sandbox settings (remembered until "
            "they change).",
        ),
        click.option(
            "--trust-project-mcp",
            is_flag=True,
            help="Start the MCP servers the project's .mcp.json or .lathe/config.toml "
            "declares (remembered until they change).",
        ),
        click.option(
            "--mcp-eager",
            is_flag=True,
            help="Start every MCP server when the session starts, not at its first use.",
        ),
        click.option(
            "-c", "overrides", multiple=True, metavar="KEY=VALUE", help="Override a config key."
        ),
    ]
    for option in reversed(options):
        func = option(func)
    return func


def run_options(headless: bool, **values):
    """The `RunOptions` of `lathe run`'s (or the interactive app's) parsed options."""
    from lathe.errors import UsageError
    from lathe.ui.setup import RunOptions

    if values.get("resume") and values.get("continue_last"):  # which one was meant?
        raise UsageError("give --resume ID or --continue (the latest session here), not both")
    return RunOptions(**values, headless=headless)  # option names are RunOptions fields


@click.group(
    cls=_LazyGroup,
    invoke_without_command=True,
    context_settings={"help_option_names": ["-h", "--help"]},
)
@click.version_option(__version__, prog_name="lathe")
@_agent_options
@click.pass_context
def cli(ctx: click.Context, **values) -> None:
    """lathe: a coding agent that reads, patches, runs and verifies real code.

    With no command, starts an interactive session in the workspace."""
    if ctx.invoked_subcommand is not None:
        remember_top_level(ctx)
        return
    from lathe.ui.interactive.app import run_interactive

    sys.exit(run_interactive(run_options(False, **values)))


def _full_mode_epilog() -> str:
    from lathe.policy.full_mode import FULL_MODE_GAPS

    gaps = "\b\n" + "\n".join(f"- {gap}" for gap in FULL_MODE_GAPS)
    return (
        "--approval full runs commands on this machine with no sandbox and no prompts; "
        "only the command guard's deny list stands (deleting or overwriting files outside "
        "the workspace and temp dirs, git config that runs programs, killing every "
        "process, ...). It does not protect against:\n\n" + gaps
    )


@cli.command(epilog=_full_mode_epilog())
@click.argument("task", nargs=-1)
@_agent_options
@click.option(
    "--command",
    "prompt_command",
    metavar="NAME",
    help="Send the prompt command NAME (.lathe/commands/NAME.md, or commands/NAME.md "
    "beside the user config) as the task, the arguments after it in place of $ARGUMENTS "
    "(one that starts with '-' goes after `--`: --command review -- --staged).",
)
@click.option("--json", "as_json", is_flag=True, help="Print every event as a JSON line on stdout.")
@click.option(
    "--attempts",
    type=click.IntRange(min=1, max=20),
    help="With --verify: start over (workspace restored, fresh conversation) up to N "
    "times in all until the check passes.",
)
@click.option(
    "--wait",
    is_flag=True,
    help="When another lathe run is working in the workspace, wait for it to finish "
    "instead of refusing to start.",
)
def run(task: tuple[str, ...], as_json: bool, prompt_command: str | None, **values) -> None:
    """Run TASK headless: progress on stderr, the final answer on stdout.

    The task may also come on standard input (TASK left out, or `-`), or from a prompt
    command (`--command NAME [ARGS...]`). Input piped in with a task goes after it, as a
    block the model is told is standard input: `git diff | lathe run "review this"`."""
    from lathe.errors import UsageError
    from lathe.llm.base import whole_text
    from lathe.ui.headless import run_headless

    # Bytes that are not UTF-8 (a Latin-1 terminal) arrive as lone surrogates, which no
    # session file, event line or request can hold.
    task = tuple(whole_text(word) for word in task)
    if prompt_command is not None:
        from lathe.prompt_commands import expand_command

        workspace = values["workspace"].expanduser().resolve()
        text = _with_piped(expand_command(workspace, prompt_command, " ".join(task)))
        sys.exit(run_headless(text, run_options(True, **values), as_json=as_json))
    if len(task) > 1:
        raise UsageError(
            f"run takes one TASK, got {len(task)} words; quote the task: "
            f'lathe run "{" ".join(task)}"'
        )
    sys.exit(run_headless(_task_text(task), run_options(True, **values), as_json=as_json))


# Input piped in with a task rides along, this much of it at most (about 35k tokens):
# its first and last parts around a marker. A 3 MB log is no one request.
_PIPED_MAX_BYTES = 128 * 1024
# A pipe nobody writes to and nobody closes (a CI runner's, a parent process's) must not
# hold a run that has its task: so long for its first byte, or its end.
_PIPED_WAIT_S = 10.0


def _task_text(task: tuple[str, ...]) -> str | None:
    """The task `lathe run` sends: the one given, with what was piped in as a block
    after it; the standard input for `-`, or when no task is given."""
    from lathe.llm.base import whole_text

    text = task[0] if task else None
    if text == "-":
        return _task_from_stdin()
    if not text or not text.strip():
        if _stdin_is_piped():
            text = whole_text(sys.stdin.read())
        return text
    return _with_piped(text)


def _with_piped(text: str) -> str:
    """`text`, with what was piped in (if anything) as a block after it."""
    piped = _piped_input()
    return text if piped is None else with_piped_input(text, piped)


def _stdin_is_piped() -> bool:
    return sys.stdin is not None and not sys.stdin.isatty()


def _task_from_stdin() -> str:
    """`lathe run -`: the task is all of the standard input, which must hold one."""
    from lathe.errors import UsageError
    from lathe.llm.base import whole_text

    if not _stdin_is_piped():
        raise UsageError(
            "run -: the task comes on standard input, which is a terminal; pipe the "
            "task in (echo TASK | lathe run -), or give it as an argument"
        )
    text = whole_text(sys.stdin.read())
    if not text.strip():
        raise UsageError(
            "run -: standard input is empty; pipe the task in, or give it as an argument"
        )
    return text


def _piped_input(wait_s: float = _PIPED_WAIT_S) -> bytes | None:
    """What was piped in alongside a task; None when standard input is a terminal or
    empty (/dev/null, a closed pipe), or when nothing came on it within `wait_s`, which
    is said on stderr. Once input starts coming it is read to its end."""
    import select

    if not _stdin_is_piped():
        return None
    try:
        fd = sys.stdin.fileno()
    except (AttributeError, OSError, ValueError):  # not a file: in memory, read at once
        return sys.stdin.read().encode("utf-8", "surrogatepass") or None
    if not select.select([fd], [], [], wait_s)[0]:
        click.echo(
            f"lathe: nothing came on standard input in {wait_s:g} s, so the task goes "
            "without it (`< /dev/null` skips the wait; a slow command's output can be "
            "saved to a file and piped from there)",
            err=True,
        )
        return None
    return sys.stdin.buffer.read() or None


def with_piped_input(task: str, data: bytes) -> str:
    """`task`, then `data` (piped in) as a delimited block, cleaned as command output
    is (`exec.terminal`); past _PIPED_MAX_BYTES only its start and end, around a marker,
    and the block says so."""
    from lathe.exec.output import cap_output
    from lathe.exec.terminal import terminal_text

    shown, cut = terminal_text(data.decode("utf-8", "replace")), ""
    if len(shown.encode()) > _PIPED_MAX_BYTES:
        shown, _ = cap_output(data, _PIPED_MAX_BYTES, None)
        cut = (
            f" ({len(data):,} bytes, cut to its start and end: to have all of it read, "
            "save it to a file in the workspace and name the file in the task)"
        )
    return f"{task}\n\nStandard input{cut}:\n<stdin>\n{shown.rstrip()}\n</stdin>"


def main() -> None:
    try:
        cli(prog_name="lathe")
    finally:
        # The interpreter's last collection at exit walks every object the imports made
        # (the SDKs' type trees: 150-250 ms here) only to free memory the OS is about
        # to take back; frozen objects are left out of it.
        gc.freeze()
