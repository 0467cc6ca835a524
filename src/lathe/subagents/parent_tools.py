"""Which of its parent's tools a child gets, and why one its profile names is missing.

A profile's `tools:` is an allow list whose names may be `*` globs, as a rule's tool
is (`mcp__docs__*`: `policy.rules.names_tool`); the lists of the profiles above a child
bound it too (`Allowed`). A child has no MCP servers of its own: the MCP tools it is
allowed are its parent's (`shared_mcp_tools`), the same objects over the same
connections, so a server runs once for the whole tree and stops with the user's run
(`McpConnection` serialises its start; requests from several tasks share its client).
Those tools' specs are deferred behind a `tool_search` of the child's own when they
would take more than `mcp.schema_share` of the child's window, as the parent's are. The
child's rules and approval judge its calls as the parent's judge its own, and a server
works where it was started: what it changes, it changes for the user's workspace, not
the child's copy (no patch carries it).

An MCP tool a profile names that the parent lacks (no such server, not trusted,
disabled, left out by the allow list of a profile above, not listed, no such tool)
refuses the task call (`lacking_mcp_tools` says which and why): the child would have
run without it and ended `completed`. It is
judged when the call comes, not when the profile is read: whether a server's tool
exists is known only to a run that listed the servers, and a user's profile serves
projects with other servers.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from lathe.plural import some_of
from lathe.policy.rules import names_tool
from lathe.tools.base import Tool, ToolRegistry


@dataclass(frozen=True)
class Allowed:
    """The allow lists bounding a child, each of the profile named beside it in
    `profiles`: a tool is allowed when every list names it (exactly or by a glob). No
    list: every tool."""

    lists: tuple[tuple[str, ...], ...] = ()
    profiles: tuple[str, ...] = ()

    def __contains__(self, tool: str) -> bool:
        return not self.leaving_out(tool)

    def leaving_out(self, tool: str) -> list[str]:
        """The profiles whose allow list does not name `tool`."""
        return [
            profile
            for profile, names in zip(self.profiles, self.lists, strict=True)
            if not any(names_tool(name, tool) for name in names)
        ]

    def within(self, names: tuple[str, ...] | None, profile: str) -> Allowed:
        """These bounds and the `tools` of the profile named `profile` (None: it bounds
        nothing)."""
        if names is None:
            return self
        return Allowed((*self.lists, names), (*self.profiles, profile))


def shared_mcp_tools(parent: ToolRegistry) -> list[Tool]:
    """The parent's MCP tools (each server's, and `mcp_resource`), not its `tool_search`,
    which lists the parent's deferred tools: a child gets its own."""
    from lathe.mcptools.tools import McpResourceTool, McpTool

    found = (parent.get(name) for name in parent.names())
    return [t for t in found if isinstance(t, McpTool | McpResourceTool)]


def register_shared(
    registries: Iterable[ToolRegistry],
    shared: list[Tool],
    *,
    window_tokens: int,
    schema_share: float,
) -> None:
    """`shared` (the parent's MCP tools a child may have) into each of the child's
    `registries`, deferred behind a `tool_search` of each one's own where their specs
    would cost more than `schema_share` of the child's window (judged once), its listing
    held to that share too (`McpSession` judges the parent's alike)."""
    from lathe.mcptools.session import schema_tokens
    from lathe.mcptools.tools import McpTool, ToolSearchTool

    server_tools = [t for t in shared if isinstance(t, McpTool)]
    budget = int(window_tokens * schema_share)
    deferred = bool(server_tools) and schema_tokens(server_tools) > budget
    for registry in registries:
        for tool in shared:
            if registry.get(tool.name) is None:
                registry.register(tool, advertised=not (deferred and isinstance(tool, McpTool)))
        if deferred and registry.get(ToolSearchTool.name) is None:
            registry.register(ToolSearchTool(server_tools, budget_tokens=budget))


def lacking_mcp_tools(
    named: Iterable[str], tools: ToolRegistry, servers: Any, allowed: Allowed
) -> list[str]:
    """Each MCP tool (or glob) of `named` that matches none of `tools` (the parent's,
    within `allowed`, the allow lists above it), with why: `servers` is the run's
    `DeclaredServers` (None: none declared)."""
    have = tools.names()
    lacking = []
    for name in named:
        if name.lower().startswith("mcp__") and not any(names_tool(name, t) for t in have):
            lacking.append(f"{name} ({_why_lacking(name, tools, servers, allowed)})")
    return lacking


def _why_lacking(name: str, tools: ToolRegistry, servers: Any, allowed: Allowed) -> str:
    from lathe.mcptools.tools import McpTool

    entries = list(servers.entries) if servers is not None else []
    rest = name[len("mcp__") :]
    if not name.startswith("mcp__"):
        return f"names are case-sensitive: did you mean mcp__{rest}?"
    # Server names hold no `__`; of `a` and `a_` (`mcp__a___x`), the longer one.
    entry = max(
        (e for e in entries if rest == e.name or rest.startswith(f"{e.name}__")),
        key=lambda e: len(e.name),
        default=None,
    )
    if entry is None:
        server = rest.split("__")[0]
        cased = next((e.name for e in entries if e.name.lower() == server.lower()), None)
        if cased is not None:
            return f"names are case-sensitive: did you mean mcp__{cased}{rest[len(server) :]}?"
        others = f", only {', '.join(e.name for e in entries)}" if entries else ""
        return f"no MCP server named {server} is configured{others}"
    if not entry.trusted:
        return (
            f"the MCP server {entry.name} ({entry.origin}) is not trusted here, so it was not "
            "started (--trust-project-mcp trusts it)"
        )
    if not entry.config.enabled:
        return f"the MCP server {entry.name} is disabled (enabled = false)"
    above = allowed.leaving_out(name)
    if above:  # the server may well have it: the parent has only what its profile allows
        return (
            f"the allow list (tools:) of the profile {', '.join(above)} above it leaves "
            "it out: a subagent has only the tools the profiles above it allow"
        )
    of_server = [
        tool.name
        for tool in (tools.get(n) for n in tools.names())
        if isinstance(tool, McpTool) and tool.connection.name == entry.name
    ]
    if not of_server:
        return (
            f"the MCP server {entry.name}'s tools could not be listed in this run (it did not "
            "start: the run's warning says why)"
        )
    return f"the MCP server {entry.name} offers only {some_of(sorted(of_server), 12)} here"
