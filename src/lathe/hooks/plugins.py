"""Python hooks from installed plugins: the `lathe.hooks` entry-point group.

An entry point names a callable taking the workspace Path and returning an AgentHooks
object (or None to stay out of this workspace). A plugin that fails to load is
reported, never fatal.
"""

from __future__ import annotations

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
    """A plugin's hooks, kept from ending the run when they raise: a `before_tool`
    that raises blocks the call (a guard that cannot decide does not let it through),
    any other hook that raises is skipped with one warning per hook point; the run, its
    session and its conversation go on whole."""

    def __init__(self, hooks: AgentHooks, name: str, warn: Callable[[str], None]) -> None:
        self._hooks = hooks
        self._name = name
        self._warn = warn
        self._warned: set[str] = set()

    def _failed(self, point: str, exc: Exception) -> str:
        said = f"{type(exc).__name__}: {exc}"
        if point not in self._warned:
            self._warned.add(point)
            self._warn(f"the plugin hook {self._name} failed in {point} ({said}); fix or "
                       "uninstall the plugin")  # fmt: skip
        return said

    def _call(self, point: str, *args: Any, fallback: Any = None) -> Any:
        try:
            return getattr(self._hooks, point)(*args)
        except Exception as exc:
            self._failed(point, exc)
            return fallback

    async def _await(self, point: str, *args: Any, fallback: Any = None) -> Any:
        try:
            return await getattr(self._hooks, point)(*args)
        except Exception as exc:
            self._failed(point, exc)
            return fallback

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
            return await self._hooks.before_tool(name, arguments)
        except Exception as exc:
            said = self._failed("before_tool", exc)
            return ToolOutput(
                content=f"Error: the plugin hook {self._name} failed before this call "
                f"({said}), so the call was not run.",
                is_error=True,
                summary="not run: plugin hook failed",
            )

    async def after_tool(
        self, name: str, arguments: dict[str, Any], output: ToolOutput
    ) -> ToolOutput:
        return await self._await("after_tool", name, arguments, output, fallback=output)

    async def before_changes(self, turn: int) -> None:
        await self._await("before_changes", turn)

    async def after_changes(self, turn: int) -> None:
        await self._await("after_changes", turn)

    def kept_verbatim(self) -> list[str]:
        return list(self._call("kept_verbatim", fallback=[]))
