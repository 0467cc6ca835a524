"""The built-in tools, in the order the model is shown them."""

from __future__ import annotations

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


def builtin_tools() -> list[Tool]:
    return [ReadTool(), EditTool(), WriteTool(), BashTool(), GrepTool(), GlobTool(), ls]
