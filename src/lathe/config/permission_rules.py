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
    from lathe.policy.rules import Rule, command_pattern_problem, parse_rule, unknown_tools

    try:
        rule = parse_rule(text)
    except UsageError as exc:
        return str(exc)
    if problem := command_pattern_problem(rule):
        return problem
    if rule.tool == rule.tool.lower():
        return None  # any other lower-case name may be a plugin's tool
    from lathe.tools.builtin import OWN_TOOL_NAMES

    meant = unknown_tools([rule.tool], OWN_TOOL_NAMES).get(rule.tool)
    if meant != rule.tool.lower():
        return None
    return (
        f"the permission rule {rule.key!r} names no tool lathe has; did you mean "
        f"{Rule(meant, rule.pattern).key!r}? Tool names are lower case: "
        f"{', '.join(sorted(OWN_TOOL_NAMES))}, a plugin's, and mcp__SERVER__TOOL"
    )
