"""Options given before a subcommand mean what they mean after it.

`lathe --deny RULE run TASK` must deny exactly as `lathe run --deny RULE TASK` does, and
`lathe -C DIR sessions list` must list DIR's sessions. The root command records the
options the user typed (`remember_top_level`); every leaf command is a `LatheCommand`,
which, before it runs, takes each recorded option into its own parameter of the same
name (`--deny`, `-C`, ...): a repeatable option adds up with the values given after the
subcommand, a single one given in both places must agree. An option the subcommand does
not take is refused (exit 2) with where it belongs, never silently dropped; so is a
subcommand's own option typed before it (`lathe --json run`): only the options `lathe`
itself takes carry over, since click cannot tell another option's value from the
subcommand's name (`lathe --attempts 2 run`).

Errors are lathe's everywhere: `LatheGroup.main` prints each one as a single line that
starts with `lathe: `, click's own (an unknown option, a missing argument) with where to
read more, and keeps click's exit code 2 for a usage error.
"""

from __future__ import annotations

import os
import re
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path, PurePath
from typing import Any, TypeVar

import click
from click.core import ParameterSource

_META_KEY = "lathe.top_level_options"
# click 8.2+ shows a bare group's help through this error; 8.1 exits 0 after it instead.
_HELP_INSTEAD: Any = getattr(click.exceptions, "NoArgsIsHelpError", ())
F = TypeVar("F", bound=Callable[..., Any])


class _Workspace(click.ParamType):
    """An existing directory; anything else is `-C DIR: no such directory` (or `not a
    directory`), the same one line for every command."""

    name = "directory"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None):
        from lathe.errors import UsageError

        if isinstance(value, str) and not value.strip():  # `-C "$REPO"`, REPO unset
            raise UsageError("-C: empty path; give the workspace folder, or leave -C out")
        path = Path(value)
        if not path.exists():
            raise UsageError(f"-C {value}: no such directory")
        if not path.is_dir():
            raise UsageError(f"-C {value}: not a directory")
        return path


def workspace_option(help_text: str) -> Callable[[F], F]:
    """`-C/--cwd DIR`, an existing directory, as the parameter `workspace`."""
    return click.option(
        "-C", "--cwd", "workspace", type=_Workspace(), default=Path("."), help=help_text
    )


@dataclass(frozen=True)
class _Given:
    flag: str  # the option's long name (else its short one), for messages: "--deny"
    opts: tuple[str, ...]  # every spelling: ("--cwd", "-C")
    value: Any


def remember_top_level(ctx: click.Context) -> None:
    """Record the options typed before the subcommand, for the subcommand to take."""
    given: list[_Given] = []
    for param in ctx.command.params:
        if not isinstance(param, click.Option) or param.name is None:
            continue
        if ctx.get_parameter_source(param.name) is not ParameterSource.COMMANDLINE:
            continue
        given.append(_Given(_long_name(param), tuple(param.opts), ctx.params[param.name]))
    ctx.meta[_META_KEY] = given


class LatheCommand(click.Command):
    """A leaf command that honours the options given before it (see the module doc)."""

    def invoke(self, ctx: click.Context) -> Any:
        for given in ctx.meta.get(_META_KEY, ()):
            self._take(ctx, given)
        return super().invoke(ctx)

    def _take(self, ctx: click.Context, given: _Given) -> None:
        param = next(
            (
                p
                for p in self.params
                if isinstance(p, click.Option) and set(given.opts) & set(p.opts)
            ),
            None,
        )
        from lathe.errors import UsageError

        if param is None or param.name is None:
            takers = ", ".join(f"`{path}`" for path in _commands_taking(ctx, given.opts))
            raise UsageError(
                f"{given.flag} does not apply to `{ctx.command_path}`; the commands that "
                f"take it: {takers}, and the interactive session (`lathe {given.flag} ...`)"
            )
        value = param.process_value(ctx, given.value)
        if ctx.get_parameter_source(param.name) is not ParameterSource.COMMANDLINE:
            ctx.params[param.name] = value
            ctx.set_parameter_source(param.name, ParameterSource.COMMANDLINE)
        elif param.multiple:
            ctx.params[param.name] = (*value, *ctx.params[param.name])
        elif value != ctx.params[param.name]:
            spellings = "/".join(sorted(given.opts, key=len))  # -C/--cwd: either was typed
            first, second = (_as_typed(v) for v in (given.value, ctx.params[param.name]))
            raise UsageError(
                f"{spellings} is given before and after `{ctx.info_name}` with different "
                f"values ({first} and {second}); give it once"
            )


def _as_typed(value: Any) -> str:
    return repr(os.fspath(value) if isinstance(value, PurePath) else value)


class LatheGroup(click.Group):
    """A command group whose subcommands are `LatheCommand`s, and which, run as the
    program, prints every error as one `lathe: ` line (see the module doc)."""

    command_class = LatheCommand

    def main(
        self,
        args: Sequence[str] | None = None,
        prog_name: str | None = None,
        complete_var: str | None = None,
        standalone_mode: bool = True,
        **extra: Any,
    ) -> Any:
        if not standalone_mode:
            return super().main(args, prog_name, complete_var, False, **extra)
        try:
            code = super().main(args, prog_name, complete_var, False, **extra)
        except _HELP_INSTEAD as exc:  # a bare group: its help
            exc.show()
            sys.exit(exc.exit_code)
        except click.ClickException as exc:
            typed = sys.argv[1:] if args is None else list(args)
            message = _subcommand_option_advice(exc, typed) or (
                f"{click_message(exc)}{_typed_words_advice(exc)}"
            )
            click.echo(f"lathe: {message}", err=True)
            sys.exit(exc.exit_code)
        except click.Abort:
            click.echo("lathe: interrupted", err=True)
            sys.exit(130)
        except Exception as exc:
            # Imported here: `lathe --version` should not pay for the error tree.
            from lathe.errors import LatheError, UsageError

            if not isinstance(exc, LatheError):
                raise
            click.echo(f"lathe: {exc}", err=True)
            sys.exit(2 if isinstance(exc, UsageError) else 1)
        # Without standalone mode click returns an `Exit`'s code (--help, --version) or
        # the command's return value, None for every lathe command.
        sys.exit(code if isinstance(code, int) else 0)


_DID_YOU_MEAN = re.compile(r"\.?\s*\((did you mean[^)]*)\)$", re.IGNORECASE)


def click_message(exc: click.ClickException) -> str:
    """Click's message in lathe's voice: "No such option '--x'." becomes "no such option
    '--x' (see `lathe run --help`)"; lathe's own ClickExceptions pass as they are."""
    message = exc.format_message()
    if not isinstance(exc, click.UsageError):
        return message
    message = _DID_YOU_MEAN.sub(lambda m: "; " + m.group(1)[0].lower() + m.group(1)[1:], message)
    if message[:1].isupper() and not message[1:2].isupper():
        message = message[0].lower() + message[1:]
    message = message.removesuffix(".")
    return f"{message} (see `{exc.ctx.command_path} --help`)" if exc.ctx else message


def _typed_words_advice(exc: click.ClickException) -> str:
    """For an unknown option typed on the command line of a command that takes words (a
    task, a prompt command's arguments): how to pass a word like `--staged` as one."""
    if isinstance(exc, click.NoSuchOption) and exc.ctx and _takes_free_arguments(exc.ctx.command):
        return "; an argument that starts with '-' goes after `--`"
    return ""


def _subcommand_option_advice(exc: click.ClickException, typed: Sequence[str]) -> str | None:
    """For an option `lathe` itself does not take but a subcommand does, typed before
    it (`lathe --json run x`): that it goes after the subcommand typed (else which
    commands take it), in place of click's "no such option" and its guess of an
    unrelated one. None for any other error."""
    if not isinstance(exc, click.NoSuchOption) or exc.ctx is None or exc.ctx.parent:
        return None
    takers = _commands_taking(exc.ctx, (exc.option_name,))
    meant = [path for path in takers if _typed_in(path.split()[1:], typed)]
    if meant:
        path = max(meant, key=len)
        return (
            f"{exc.option_name} is an option of `{path}`: put it after "
            f"`{path.split(maxsplit=1)[1]}` (`{path} {exc.option_name} ...`)"
        )
    if not takers:
        return None
    owners = " and ".join(", ".join(f"`{path}`" for path in takers).rsplit(", ", 1))
    return f"{exc.option_name} is an option of {owners}: put it after the subcommand"


def _typed_in(words: Sequence[str], typed: Sequence[str]) -> bool:
    """Whether `words` (a subcommand's, `sessions list`) were typed one after another."""
    return any(list(typed[i : i + len(words)]) == list(words) for i in range(len(typed)))


def _takes_free_arguments(command: click.Command) -> bool:
    """Whether `command` takes any number of words (a task, a prompt command's
    arguments), where a word like `--staged` is read as an option unless after `--`."""
    return any(isinstance(p, click.Argument) and p.nargs == -1 for p in command.params)


def _long_name(param: click.Option) -> str:
    long = [opt for opt in param.opts if opt.startswith("--")]
    return long[0] if long else param.opts[0]


def _commands_taking(ctx: click.Context, opts: Sequence[str]) -> list[str]:
    """The paths of the leaf commands with an option spelled one of `opts`."""
    root = ctx.find_root()
    found: list[str] = []

    def walk(command: click.Command, path: str) -> None:
        if isinstance(command, click.Group):
            for name in command.list_commands(root):
                sub = command.get_command(root, name)
                if sub is not None and not sub.hidden:
                    walk(sub, f"{path} {name}")
        elif any(isinstance(p, click.Option) and set(opts) & set(p.opts) for p in command.params):
            found.append(path)

    walk(root.command, root.info_name or "lathe")
    return found
