"""Python hooks from installed plugins: the `lathe.hooks` entry-point group.

An entry point names a callable taking the workspace Path and returning an AgentHooks
object (or None to stay out of this workspace). A plugin that fails to load is
reported, never fatal.
"""

from __future__ import annotations

from pathlib import Path

from lathe.hooks.base import AgentHooks
from lathe.plugins import HOOKS, describe_failure, entry_points_of, problem_line


def load_plugin_hooks(workspace: Path) -> tuple[list[AgentHooks], list[str]]:
    hooks: list[AgentHooks] = []
    problems: list[str] = []
    for entry in entry_points_of(HOOKS):
        try:
            made = entry.load()(workspace)
        except Exception as exc:  # a broken plugin must not stop the agent
            problems.append(problem_line(entry, describe_failure(exc)))
            continue
        if made is not None:
            hooks.append(made)
    return hooks, problems
