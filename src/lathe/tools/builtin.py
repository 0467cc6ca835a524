"""The built-in tools, in the order the model is shown them."""

from __future__ import annotations

from collections.abc import Iterable

from lathe.tools.base import Tool
from lathe.tools.bash import BashTool
from lathe.tools.edit import EditTool
from lathe.tools.glob import GlobTool
from lathe.tools.grep import GrepTool
from lathe.tools.ls import ls
from lathe.tools.read import ReadTool
from lathe.tools.write import WriteTool

OWN_TOOL_NAMES = (
    "read", "edit", "write", "bash", "grep", "glob", "ls", "memory", "recall", "skill",
)  # fmt: skip
"""Every tool of lathe's own a profile's `tools` may name (memory and recall exist when
memory is on, skill when the workspace has skills)."""

# Tools a run adds after its safety is built: a child's task tool, MCP's search and
# resource tools (tests/policy holds these to the classes' names).
TOOLS_ADDED_LATER = ("task", "tool_search", "mcp_resource")


def known_tool_names(loaded: Iterable[str]) -> set[str]:
    """The tool names a rule, hook or subagent profile may name in a run: lathe's own,
    `loaded` (the run's, its plugins' among them) and those a run adds later."""
    return {*OWN_TOOL_NAMES, *loaded, *TOOLS_ADDED_LATER}


def builtin_tools() -> list[Tool]:
    return [ReadTool(), EditTool(), WriteTool(), BashTool(), GrepTool(), GlobTool(), ls]
