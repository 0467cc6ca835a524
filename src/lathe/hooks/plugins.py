"""Python hooks from installed plugins: the `lathe.hooks` entry-point group.

An entry point names a callable taking the workspace Path and returning an AgentHooks
object (or None to stay out of this workspace). A plugin that fails to load is
reported, never fatal.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from lathe.hooks.base import AgentHooks
from lathe.plugins import (
    HOOKS,
    LOAD_FAILURES,
    describe_failure,
    entry_points_of,
    hooks_from,
    problem_line,
)
from lathe.tools.base import ToolOutput
from lathe.types import Message

if TYPE_CHECKING:
    from lathe.events import RunFinished


def load_plugin_hooks(
    workspace: Path, warn: Callable[[str], None]
) -> tuple[list[AgentHooks], list[str]]:
    """The plugins' hooks, each behind a `PluginGuard` that reports to `warn`, and the
    problems of those that failed to load."""
    hooks: list[AgentHooks] = []
    problems: list[str] = []
    for entry in entry_points_of(HOOKS):
        try:
            made = hooks_from(entry, workspace)
        except LOAD_FAILURES as exc:  # a broken plugin must not stop the agent
            problems.append(problem_line(entry, describe_failure(exc)))
            continue
        if made is not None:
            hooks.append(PluginGuard(made, f"{entry.name} ({entry.value})", warn))
    return hooks, problems


class PluginGuard(AgentHooks):
    """A plugin's hooks, kept from ending the run when they raise or return what their
    hook point does not take (an `after_tool` giving None, a `kept_verbatim` giving no
    list of texts, a coroutine from a hook point that is not async): a `before_tool`
    that fails so blocks the call (a guard that cannot decide does not let it through),
    any other is skipped with one warning per hook point, and the run does what it
    would without it; the run, its session and its conversation go on whole."""

    def __init__(self, hooks: AgentHooks, name: str, warn: Callable[[str], None]) -> None:
        self._hooks = hooks
        self._name = name
        self._warn = warn
        self._warned: set[str] = set()

    def _failed(self, point: str, said: str) -> str:
        if point not in self._warned:
            self._warned.add(point)
            self._warn(f"the plugin hook {self._name} failed in {point} ({said}); fix or "
                       "uninstall the plugin")  # fmt: skip
        return said

    def _call(self, point: str, *args: Any, fallback: Any = None) -> Any:
        try:
            made = getattr(self._hooks, point)(*args)
        except Exception as exc:
            self._failed(point, _raised(exc))
            return fallback
        if inspect.isawaitable(made):  # an `async def` where the loop awaits nothing
            if inspect.iscoroutine(made):
                made.close()  # never run: no "never awaited" warning at exit
            self._failed(point, f"it returned {_shown(made)}: this hook point is not async")
            return fallback
        return made

    async def _await(self, point: str, *args: Any, fallback: Any = None) -> Any:
        try:
            return await getattr(self._hooks, point)(*args)
        except Exception as exc:
            self._failed(point, _raised(exc))
            return fallback

    def _wrong(self, point: str, made: Any, wanted: str) -> str:
        return self._failed(point, f"it returned {_shown(made)}, not {wanted}")

    def on_message(self, message: Message) -> None:
        self._call("on_message", message)

    def on_compaction(
        self, opening: str, kept_messages: int, tokens_before: int, tokens_after: int
    ) -> None:
        self._call("on_compaction", opening, kept_messages, tokens_before, tokens_after)

    async def on_run_start(self, task: str) -> None:
        await self._await("on_run_start", task)

    async def on_run_end(self, finished: RunFinished) -> None:
        await self._await("on_run_end", finished)

    async def before_tool(
        self, name: str, arguments: dict[str, Any]
    ) -> ToolOutput | dict[str, Any] | None:
        try:
            verdict = await self._hooks.before_tool(name, arguments)
        except Exception as exc:
            said = self._failed("before_tool", _raised(exc))
        else:
            if verdict is None or isinstance(verdict, ToolOutput | dict):
                return verdict
            said = self._wrong("before_tool", verdict, "None, arguments or a ToolOutput")
        return ToolOutput(
            content=f"Error: the plugin hook {self._name} failed before this call "
            f"({said}), so the call was not run.",
            is_error=True,
            summary="not run: plugin hook failed",
        )

    async def after_tool(
        self, name: str, arguments: dict[str, Any], output: ToolOutput
    ) -> ToolOutput:
        made = await self._await("after_tool", name, arguments, output, fallback=output)
        if isinstance(made, ToolOutput):
            return made
        self._wrong("after_tool", made, "a ToolOutput")
        return output

    async def before_changes(self, turn: int) -> None:
        await self._await("before_changes", turn)

    async def after_changes(self, turn: int) -> None:
        await self._await("after_changes", turn)

    def kept_verbatim(self) -> list[str]:
        made = self._call("kept_verbatim", fallback=[])
        if isinstance(made, list | tuple) and all(isinstance(text, str) for text in made):
            return list(made)
        self._wrong("kept_verbatim", made, "a list of texts")
        return []


def _raised(exc: Exception) -> str:
    return f"{type(exc).__name__}: {exc}"


def _shown(made: Any) -> str:
    """What a hook returned, short enough for a one-line warning."""
    if inspect.iscoroutine(made):
        return "a coroutine"
    shown = repr(made)
    return shown if len(shown) <= 60 else shown[:59] + "…"
