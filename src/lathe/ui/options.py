"""Options given before a subcommand mean what they mean after it.

`lathe --deny RULE run TASK` must deny exactly as `lathe run --deny RULE TASK` does, and
`lathe -C DIR sessions list` must list DIR's sessions. The root command records the
options the user typed (`remember_top_level`); every leaf command is a `LatheCommand`,
which, before it runs, takes each recorded option into its own parameter of the same
name (`--deny`, `-C`, ...): a repeatable option adds up with the values given after the
subcommand, a single one given in both places must agree. An option the subcommand does
not take is refused (exit 2) with where it belongs, never silently dropped.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

import click
from click.core import ParameterSource

_META_KEY = "lathe.top_level_options"
F = TypeVar("F", bound=Callable[..., Any])


def workspace_option(help_text: str) -> Callable[[F], F]:
    """`-C/--cwd DIR` for a command about one existing workspace, as `workspace`."""
    return click.option(
        "-C",
        "--cwd",
        "workspace",
        type=click.Path(exists=True, file_okay=False, path_type=Path),
        default=Path("."),
        help=help_text,
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
        if param is None or param.name is None:
            raise click.UsageError(
                f"{given.flag} does not apply to `{ctx.command_path}`; it is an option of "
                f"`lathe run` and of the interactive session (`lathe {given.flag} ...`)",
                ctx,
            )
        value = param.process_value(ctx, given.value)
        if ctx.get_parameter_source(param.name) is not ParameterSource.COMMANDLINE:
            ctx.params[param.name] = value
            ctx.set_parameter_source(param.name, ParameterSource.COMMANDLINE)
        elif param.multiple:
            ctx.params[param.name] = (*value, *ctx.params[param.name])
        elif value != ctx.params[param.name]:
            raise click.UsageError(
                f"{given.flag} is given before and after `{ctx.info_name}` with different "
                f"values ({given.value!r} and {ctx.params[param.name]!r}); give it once",
                ctx,
            )


class LatheGroup(click.Group):
    """A command group whose subcommands are `LatheCommand`s."""

    command_class = LatheCommand


def _long_name(param: click.Option) -> str:
    long = [opt for opt in param.opts if opt.startswith("--")]
    return long[0] if long else param.opts[0]
