"""Checking the permission rules a config layer gives, when the config is loaded.

What can be known then is checked then, so the error names the file, variable or `-c`
and the entry (`permissions.deny[0]`): a rule the parser cannot read, a command pattern
that matches no command, a tool of lathe's own written in the wrong case (`Edit(...)`
denied nothing). Whether any other name is a tool depends on the plugins and MCP servers
the run loads, so the run judges those (`ui.safety.check_rule_tools`).
"""

from __future__ import annotations

from lathe.errors import UsageError


def rule_problem(text: str) -> str | None:
    """Why the rule `text` cannot do what it says, as far as the config alone tells; None
    when nothing is wrong that can be known before the run."""
    from lathe.policy.rules import command_pattern_problem, misnamed_tool, parse_rule

    try:
        rule = parse_rule(text)
    except UsageError as exc:
        return str(exc)
    if problem := command_pattern_problem(rule):
        return problem
    from lathe.tools.builtin import OWN_TOOL_NAMES

    # Any other name may be a plugin's tool, or an MCP server's.
    if rule.tool in OWN_TOOL_NAMES or rule.tool.lower() not in OWN_TOOL_NAMES:
        return None
    return misnamed_tool(
        rule, rule.tool.lower(), f"{', '.join(sorted(OWN_TOOL_NAMES))}, a plugin's"
    )
