"""A session's MCP servers: their tools in the run's registry, and their end.

The model needs the tools' names in its first request, and a server starts on first
use, so lathe keeps each server's tool list in `LATHE_HOME/mcp-tools/`, keyed by a
fingerprint of the server's settings. `McpSession.on_run_start` (a hook, awaited before
the first request) registers the tools: from that cache without starting anything, or,
for a server never listed before, by starting it and listing them, all servers at once,
each bounded by its startup_timeout_s. With `--mcp-eager` a cached server is started
too, in the background, so the first request does not wait for it. A server
that starts later for a call lists its tools again in the background and refreshes the
cache: a tool that appeared is registered too, and one the run has takes what the server
says of it now (read-only or not, its schema). A server that cannot be listed is a
notice, and its tools are missing from that run.

When the MCP tools' specs would cost more than `mcp.schema_share` of the model's window
(3 bytes a token, as `agent/context.py` estimates), they are registered deferred: only
`tool_search` is advertised, its description listing each tool's name and first
sentence; every tool stays callable by name (see `tools/base.py` `ToolRegistry`).
`aclose` stops every server; `Safety.aclose` calls it when the face ends.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

from lathe.events import Notice
from lathe.hooks.base import AgentHooks
from lathe.mcptools.connection import McpConnection
from lathe.mcptools.servers import DeclaredServers, ServerEntry
from lathe.mcptools.tools import (
    McpResourceTool,
    McpTool,
    ToolSearchTool,
    clashes,
    mcp_tools,
    offered,
    tool_name,
)
from lathe.tools.base import ToolRegistry, tool_spec


def schema_tokens(tools: list[McpTool]) -> int:
    """What the tools' specs cost in a request, at 3 bytes a token."""
    specs = (tool_spec(t) for t in tools)
    text = "".join(
        json.dumps([s.name, s.description, s.parameters], ensure_ascii=False) for s in specs
    )
    return len(text.encode()) // 3 + 1


class McpSession(AgentHooks):
    def __init__(
        self,
        declared: DeclaredServers,
        registry: ToolRegistry,
        *,
        workspace: Path,
        home: Path,
        window_tokens: int,
        schema_share: float,
        eager: bool,
        emit: Callable[[Any], None],
    ) -> None:
        self._registry = registry
        self._home = home
        self._budget = int(window_tokens * schema_share)
        self._eager = eager
        self._emit = emit
        self._notices = list(declared.notices)
        self._declared = [entry.name for entry in declared.entries]
        self._names: dict[str, set[str]] = {}  # by server, once listed (`server_tools`)
        self.listed_from_cache: set[str] = set()
        """The servers whose tools this run knows from the cache (a newer release of the
        server may have others); their list is refreshed in the background."""
        self.connections = {
            entry.name: McpConnection(entry, workspace, home / "logs")
            for entry in declared.runnable()
        }
        for connection in self.connections.values():
            connection.on_started = self._refresh
        self.tools: dict[str, McpTool] = {}
        self.deferred = False
        self._prepared = self._listed = False
        self._refreshes: set[asyncio.Task[None]] = set()
        self._relisting: set[str] = set()
        self._listing_done = asyncio.Event()
        self._said: set[str] = set()  # the warnings given about names and listings

    async def on_run_start(self, task: str) -> None:
        if self._prepared:
            return
        self._prepared = True
        for notice in self._notices:
            self._emit(Notice(level="warning", message=notice))
        if not self.connections:
            return
        connections = list(self.connections.values())
        listed = await asyncio.gather(*(self._tools_of(c) for c in connections))
        # Named in the servers' declared order, so a clash gives the same names each run.
        named: dict[str, McpTool] = {}
        for connection, remote in zip(connections, listed, strict=True):
            if remote is None:
                continue
            named |= {tool.name: tool for tool in self._wrap(connection, remote, named)}
            self._names[connection.name] = {tool_name(connection.name, t["name"]) for t in remote}
        tools = list(named.values())
        self.deferred = schema_tokens(tools) > self._budget
        for tool in tools:
            self._add(tool)
        for tool in self.tools.values():
            self._names[tool.connection.name].add(tool.name)
        if self.deferred:
            self._registry.register(ToolSearchTool(tools, budget_tokens=self._budget))
        self._registry.register(McpResourceTool(self.connections))
        self._listed = True
        self._listing_done.set()

    def server_tools(self) -> dict[str, set[str] | None]:
        """Each declared server's tool names as this run names them, those its filters
        leave out too (a rule may name one), or None where the run does not know them:
        not listed (it did not start, is not trusted or not enabled), or not yet (its
        first run has not started)."""
        return {name: self._names.get(name) for name in self._declared}

    async def _tools_of(self, connection: McpConnection) -> list[dict[str, Any]] | None:
        """The server's tool list, from the cache or the server; None when it cannot
        be listed (a notice says why)."""
        cached = self._cached(connection.entry)
        if cached is not None:
            self.listed_from_cache.add(connection.name)
            if self._eager:  # start it now, without holding up the first request
                self._relist(connection)
            return cached
        try:
            listed = await connection.list_tools()
        except Exception as exc:  # McpFailure, or a server's malformed listing
            self._emit(
                Notice(level="warning", message=f"{exc}; its tools are not offered in this run")
            )
            return None
        for note in connection.listing_notes:
            self._warn_once(note)
        remote = [remote_tool(tool) for tool in listed]
        self._store(connection.entry, remote)
        return remote

    def _wrap(
        self, connection: McpConnection, remote: list[dict[str, Any]], others: dict[str, McpTool]
    ) -> list[McpTool]:
        """The server's tools its filters keep, named apart from `others` (the other
        servers' tools); a name another server's tool has is a warning, once."""
        tools = mcp_tools(connection, offered(connection.entry.config, remote), others)
        for clash in clashes(tools, others):
            self._warn_once(clash)
        return tools

    def _warn_once(self, message: str) -> None:
        """A warning, unless this session gave it already (a server lists its tools
        again each time it starts)."""
        if message not in self._said:
            self._said.add(message)
            self._emit(Notice(level="warning", message=message))

    def _add(self, tool: McpTool) -> None:
        if tool.name in self.tools or self._registry.get(tool.name) is not None:
            return  # another server's tool, or one of lathe's own, has the name
        self.tools[tool.name] = tool
        self._registry.register(tool, advertised=not self.deferred)

    async def _refresh(self, connection: McpConnection) -> None:
        """A server started for a call: list its tools again, off the call's path."""
        if self._listed:  # (else the session's own listing started it)
            self._relist(connection)

    def _relist(self, connection: McpConnection) -> None:
        """List the server's tools in the background (starting it if need be), refresh
        the cache and register any tool that is new."""
        if connection.name in self._relisting:
            return
        self._relisting.add(connection.name)

        async def relist() -> None:
            try:
                remote = [remote_tool(tool) for tool in await connection.list_tools()]
            except Exception:
                return  # the call that started it reports what is wrong
            finally:
                self._relisting.discard(connection.name)
            for note in connection.listing_notes:
                self._warn_once(note)
            self._store(connection.entry, remote)
            # Named once every server's tools are (an eager start can end first).
            await self._listing_done.wait()
            listed = {tool["name"]: tool for tool in remote}
            for tool in self._wrap(connection, remote, self.tools):
                known = self.tools.get(tool.name)
                if known is None:
                    self._add(tool)
                elif known.connection is connection and known.remote_name in listed:
                    known.relisted(listed[known.remote_name])

        task = asyncio.create_task(relist())
        self._refreshes.add(task)
        task.add_done_callback(self._refreshes.discard)

    def _cache_file(self, entry: ServerEntry) -> Path:
        return self._home / "mcp-tools" / f"{entry.name}-{entry.fingerprint}.json"

    def _cached(self, entry: ServerEntry) -> list[dict[str, Any]] | None:
        try:
            data = json.loads(self._cache_file(entry).read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return None
        tools = data.get("tools") if isinstance(data, dict) else None
        return tools if isinstance(tools, list) else None

    def _store(self, entry: ServerEntry, remote: list[dict[str, Any]]) -> None:
        from lathe.atomic_write import write_atomic

        path = self._cache_file(entry)
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            write_atomic(path, json.dumps({"server": entry.name, "tools": remote}).encode())
        except OSError:
            pass  # no cache: the next session lists the tools again

    async def aclose(self) -> None:
        for task in list(self._refreshes):
            task.cancel()
        await asyncio.gather(
            *(c.aclose() for c in self.connections.values()), return_exceptions=True
        )


def remote_tool(tool: Any) -> dict[str, Any]:
    """What lathe keeps of a server's tool (JSON, for the cache)."""
    annotations = tool.annotations
    return {
        "name": tool.name,
        "description": tool.description or "",
        "input_schema": tool.input_schema,
        "read_only": bool(annotations and annotations.read_only_hint),
    }


def mcp_session(
    setup: Any, registry: ToolRegistry, emit: Callable[[Any], None]
) -> McpSession | None:
    """The run's MCP session (None when no server is declared), its tools added to
    `registry` when the first run starts. `setup` is the face's `RunSetup`."""
    from lathe.home import lathe_home

    config = setup.loaded.config.mcp
    declared = setup.mcp_servers  # decided by setup.prepare
    if declared is None or not declared.entries:
        return None
    if declared.runnable():
        from lathe.warmup import import_ahead

        # The SDK's type tree takes about 2 s to import here; the first call (or the
        # listing) must not wait for it when the first model reply could hide it.
        import_ahead("mcp", "jsonschema")
    return McpSession(
        declared,
        registry,
        workspace=setup.workspace,
        home=lathe_home(),
        window_tokens=setup.model.context_window,
        schema_share=config.schema_share,
        eager=setup.options.mcp_eager,
        emit=emit,
    )
