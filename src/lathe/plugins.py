"""Plugins: installed distributions extending lathe through entry-point groups.

- `lathe.tools`: an object that is a `Tool`, or a callable taking no argument and
  returning a Tool or a list of them. Their tools join every run's registry after the
  built-ins; a name already taken, or one lathe may give a tool of its own in a run
  (`task`, registered after the plugins, and an MCP server's `mcp__...` too), is a
  problem, and that tool is skipped; so is one whose name a model cannot call (1 to 64
  letters, digits, `_` or `-`) or whose spec cannot be built (`tools/base.tool_spec`).
  A tool's `execute` that raises, or returns no `ToolOutput`, is that tool's internal
  error, which the model is told (agent/tooling.py).
- `lathe.providers`: the entry point's name is a provider `kind` (`[providers.NAME]
  kind = "..."`), its object a factory `(Endpoint) -> Provider` (see llm/registry.py).
  Read only when a config names a kind lathe does not have itself.
- `lathe.hooks`: a callable `(workspace: Path) -> AgentHooks | None` (hooks/plugins.py).
- `lathe.executors`: the entry point's name is what `permissions.executor` selects, its
  object a factory called with the keyword arguments `workspace` (Path), `hide_env`
  (variable names commands must not see) and `keep_env` (patterns that stay) and
  returning an `Executor` (exec/base.py, whose contract it must keep). Commands it runs
  count as unsandboxed for the approval rules: lathe cannot know what it isolates.

Entry points are read with importlib.metadata only when one of these is needed, never
at import or for `lathe --version`. A plugin that fails to import (or whose object is
not what its group takes) is never fatal: it is skipped with a one-line problem, the
run goes on, and `lathe plugins` and `lathe doctor` report it. An executor or provider
kind the config *asks for* that cannot load stops the run before it starts instead:
running commands, or sending the conversation, somewhere other than where the user
chose is worse than not running.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable
from dataclasses import dataclass
from importlib.metadata import EntryPoint
from pathlib import Path
from typing import Any

GROUPS = ("lathe.tools", "lathe.providers", "lathe.hooks", "lathe.executors")
TOOLS, PROVIDERS, HOOKS, EXECUTORS = GROUPS


@dataclass(frozen=True)
class PluginStatus:
    """One entry point as `lathe plugins` lists it."""

    name: str
    group: str
    target: str  # "module:attribute", as the distribution declares it
    distribution: str  # "name version", or "?" when importlib.metadata cannot say
    problem: str | None = None  # why it did not load; None: it loaded
    provides: str = ""  # what it brings, e.g. the tool names and those a run skips

    @property
    def status(self) -> str:
        return f"failed: {self.problem}" if self.problem else "loaded"


# What loading a plugin may raise that lathe reports and goes on from: a `sys.exit()` at
# import ("needs X") had ended every command that loads plugins.
LOAD_FAILURES = (Exception, SystemExit)


def entry_points_of(group: str) -> list[EntryPoint]:
    return [entry for entry in _every_entry_point() if entry.group == group]


@functools.cache
def _every_entry_point() -> tuple[EntryPoint, ...]:
    """Read once a process: each read walks every installed distribution."""
    from importlib.metadata import entry_points

    every = entry_points()  # one walk of the distributions; select() only filters it
    found = [entry for group in GROUPS for entry in every.select(group=group)]
    return tuple(sorted(found, key=lambda entry: (GROUPS.index(entry.group), entry.name)))


def distribution_of(entry: EntryPoint) -> str:
    dist = getattr(entry, "dist", None)
    if dist is None:
        return "?"
    return f"{dist.metadata['Name'] or dist.name} {dist.version}"


def describe_failure(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {text[0]}" if text else type(exc).__name__


def problem_line(entry: EntryPoint, problem: str) -> str:
    """The one line that tells the user a plugin was skipped."""
    return (
        f"plugin {entry.name!r} ({entry.group}, from {distribution_of(entry)}) skipped: {problem}"
    )


def load_tool_plugins(on_problem: Callable[[str], None], taken: set[str]) -> list[Any]:
    """The tools of every `lathe.tools` plugin, none named like one in `taken`, like a
    tool lathe may register in a run, nor like one another, each with a name the model
    can call and a spec lathe can build; each plugin that fails, or tool skipped, goes
    to `on_problem`."""
    tools: list[Any] = []
    for entry in entry_points_of(TOOLS):
        try:
            made = _tools_from(entry)
        except LOAD_FAILURES as exc:  # a broken plugin must not stop the agent
            on_problem(problem_line(entry, describe_failure(exc)))
            continue
        kept, skipped = _named_apart(made, taken)
        for name, why in skipped.items():
            on_problem(problem_line(entry, f"the tool {name!r} has {why}"))
        tools.extend(kept)
    return tools


# Why a plugin's tool is skipped: a run's notice and `lathe plugins` both say it.
_SKIPPED = {
    "own": "lathe's own name",
    "mcp": "a name kept for MCP servers' tools (mcp__SERVER__TOOL)",
    "taken": "another plugin's name",
    "name": "a name the model cannot call (1 to 64 letters, digits, _ or -)",
}

# What every model endpoint lathe speaks to takes as a function's name; a request
# offering any other name is refused whole, failing every turn of the run.
_CALLABLE_NAME = re.compile(r"[A-Za-z0-9_-]{1,64}")


def _named_apart(made: list[Any], taken: set[str]) -> tuple[list[Any], dict[str, str]]:
    """The tools of `made` a run registers, their names added to `taken`, and why each
    other was skipped, by its name. Lathe's own names are reserved whether or not this
    run registers them yet: the task tool and MCP's come after the plugins, and a
    plugin's tool of that name had ended every run."""
    from lathe.tools.builtin import known_tool_names

    own = known_tool_names(())
    kept: list[Any] = []
    skipped: dict[str, str] = {}
    for tool in made:
        name = getattr(tool, "name", None)
        if not isinstance(name, str) or not _CALLABLE_NAME.fullmatch(name):
            skipped[str(name)] = _SKIPPED["name"]
        elif (unbuilt := _spec_failure(tool)) is not None:
            skipped[name] = f"a spec lathe cannot build ({unbuilt})"
        elif name in own:
            skipped[name] = _SKIPPED["own"]
        elif name.lower().startswith("mcp__"):
            skipped[name] = _SKIPPED["mcp"]
        elif name in taken:
            skipped[name] = _SKIPPED["taken"]
        else:
            taken.add(name)
            kept.append(tool)
    return kept, skipped


def _spec_failure(tool: Any) -> str | None:
    """Why the spec the model is sent cannot be built for `tool`, in full or brief (a
    registry builds it as the run starts, and a `parameters` that is no Params model
    had ended every run there); None: it can."""
    from lathe.tools.base import tool_spec

    try:
        for brief in (False, True):
            spec = tool_spec(tool, brief=brief)
            if not isinstance(spec.description, str):
                raise TypeError(f"its description is {type(spec.description).__name__}")
    except Exception as exc:  # a plugin's bug, whatever it raises
        return describe_failure(exc)
    return None


def _tools_from(entry: EntryPoint) -> list[Any]:
    from lathe.tools.base import Tool

    made = entry.load()
    if not isinstance(made, Tool):
        if not callable(made):
            raise TypeError("it is neither a Tool nor a callable returning tools")
        made = made()
    made = list(made) if isinstance(made, list | tuple) else [made]
    wrong = [repr(m)[:60] for m in made if not isinstance(m, Tool)]
    if wrong:
        raise TypeError(f"it gave {', '.join(wrong)}, which is not a lathe Tool")
    return made


def _shown(name: str) -> str:
    """A skipped tool's name in `lathe plugins`' list: quoted when it is no name a
    model can call ("" had been a blank there)."""
    return name if _CALLABLE_NAME.fullmatch(name) else repr(name)


def hooks_from(entry: EntryPoint, workspace: Path) -> Any:
    """The hooks a `lathe.hooks` plugin makes for `workspace` (None: none here); a
    TypeError when what it gives is not `AgentHooks` (each of its calls had failed)."""
    from lathe.hooks.base import AgentHooks

    made = entry.load()(workspace)
    if made is not None and not isinstance(made, AgentHooks):
        raise TypeError(f"it gave {repr(made)[:60]}, which is not lathe AgentHooks")
    return made


def named_factory(group: str, name: str, what: str) -> Callable[..., Any] | None:
    """The object of the `group` entry point called `name`, None when no plugin has
    one; a UsageError when it is there but cannot load (`what` names the setting)."""
    from lathe.errors import UsageError

    for entry in entry_points_of(group):
        if entry.name != name:
            continue
        try:
            factory = entry.load()
        except LOAD_FAILURES as exc:
            raise UsageError(
                f"{what}: {problem_line(entry, describe_failure(exc))}; fix or "
                "uninstall the plugin (`lathe plugins` lists them)"
            ) from exc
        if not callable(factory):
            raise UsageError(f"{what}: {problem_line(entry, 'it is not callable')}")
        return factory
    return None


def names_in(group: str) -> list[str]:
    return [entry.name for entry in entry_points_of(group)]


def survey() -> list[PluginStatus]:
    """Every plugin entry point, each loaded (imported; a tools plugin's tools made) to
    say whether it works, and a tools plugin's tools a run skips. For `lathe plugins`
    and `lathe doctor`."""
    found: list[PluginStatus] = []
    taken: set[str] = set()  # as a run takes the plugins' tools: in order, first kept
    for group in GROUPS:
        for entry in entry_points_of(group):
            problem, provides = None, ""
            try:
                if group == TOOLS:
                    kept, skipped = _named_apart(_tools_from(entry), taken)
                    provides = "; ".join([
                        *([", ".join(tool.name for tool in kept)] if kept else []),
                        *(f"{_shown(name)} skipped: {why}" for name, why in skipped.items()),
                    ])  # fmt: skip
                elif group == HOOKS:
                    hooks_from(entry, Path.cwd())
                elif not callable(entry.load()):
                    problem = "it is not callable"
            except LOAD_FAILURES as exc:  # reported, as a run would skip it
                problem = describe_failure(exc)
            found.append(
                PluginStatus(
                    name=entry.name,
                    group=group,
                    target=entry.value,
                    distribution=distribution_of(entry),
                    problem=problem,
                    provides=provides,
                )
            )
    return found
