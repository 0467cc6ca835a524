"""The tool names a rule may use: lathe's own, the plugins', and those a run adds later."""

from __future__ import annotations


def test_the_tools_a_run_adds_later_are_named_as_their_classes_name_them():
    from lathe.mcptools.tools import McpResourceTool, ToolSearchTool
    from lathe.subagents.task_tool import TaskTool
    from lathe.tools.builtin import TOOLS_ADDED_LATER

    assert set(TOOLS_ADDED_LATER) == {TaskTool.name, ToolSearchTool.name, McpResourceTool.name}
