"""`lathe mcp list|test|import|serve`: the workspace's MCP servers, one server's health,
servers taken over from another agent's config (Codex's `config.toml`, Gemini's
`settings.json`), and lathe itself as an MCP server over stdio (`lathe.service.mcp_server`).
Every server the first three start is stopped before they return."""

from __future__ import annotations

import asyncio
import os
import sys
import time
from pathlib import Path
from typing import Any

import click

from lathe.ui.options import LatheGroup, workspace_option

_workspace = workspace_option(
    "Workspace whose MCP servers to use (default: the current directory)."
)
_trust = click.option(
    "--trust-project-mcp",
    is_flag=True,
    help="Trust (and remember) the servers the project declares, and start them.",
)


@click.group("mcp", cls=LatheGroup)
def mcp_group() -> None:
    """List, check and import MCP servers; serve lathe as one."""


@mcp_group.command("list")
@_workspace
@_trust
def list_servers(workspace: Path, trust_project_mcp: bool) -> None:
    """Every declared server: where it comes from, whether it is trusted, its transport
    and health, its tools and what their schemas cost in tokens, its resources and
    prompts. Only trusted servers are started."""
    from lathe.ui.table import Column, print_list

    declared = _declared(workspace, trust_project_mcp)
    if not declared.entries:
        click.echo("no MCP servers: add [mcp.servers.NAME] to a config file or a .mcp.json")
        for notice in declared.notices:
            click.echo(f"lathe: {notice}", err=True)
        return
    reports, clashes = asyncio.run(_probe_all(declared.runnable(), workspace))
    mask = _redactor(declared).mask
    rows, details, notices = [], [], [*declared.notices, *clashes]
    for entry in declared.entries:
        report = reports.get(entry.name)
        if not entry.trusted:
            health = "not started: untrusted (--trust-project-mcp)"
        elif not entry.config.enabled:
            health = "not started: disabled"
        else:
            assert report is not None
            health = report.health
        tools = str(len(report.tools)) if report and report.ok else "-"
        tokens = f"{report.tokens:,}" if report and report.ok else "-"
        trust = "user" if not entry.from_project else ("trusted" if entry.trusted else "untrusted")
        row = [entry.name, entry.transport, trust, health, tools, tokens, entry.origin]
        rows.append([mask(cell) for cell in row])
        if report and report.ok:
            details.append(report.describe())
            notices += report.notes
    print_list(
        [
            Column("NAME"), Column("TRANSPORT"), Column("TRUST"), Column("HEALTH", flex=True),
            Column("TOOLS", right=True), Column("TOKENS", right=True),
            Column("ORIGIN", flex=True, keep_end=True, drop=1),
        ],
        rows,
    )  # fmt: skip
    for lines in details:
        click.echo("")
        for line in lines:
            click.echo(mask(line))
    for notice in notices:
        click.echo(f"lathe: {mask(notice)}", err=True)


@mcp_group.command("test")
@click.argument("name")
@_workspace
@_trust
def test_server(name: str, workspace: Path, trust_project_mcp: bool) -> None:
    """Start server NAME, list its tools, resources and prompts, and stop it; exit 1
    when it does not start or answer."""
    from lathe.errors import UsageError

    declared = _declared(workspace, trust_project_mcp)
    entry = next((e for e in declared.entries if e.name == name), None)
    if entry is None:
        names = ", ".join(e.name for e in declared.entries) or "none"
        raise UsageError(f"there is no MCP server named {name!r} here (servers: {names})")
    if not entry.trusted:
        raise UsageError(
            f"MCP server {name} comes from {entry.origin}, which is not trusted; review it, "
            "then pass --trust-project-mcp"
        )
    report = asyncio.run(_probe_all([entry], workspace))[0][name]
    mask = _redactor(declared).mask
    click.echo(mask(f"{name}: {report.health}"))
    if not report.ok:
        raise SystemExit(1)
    for line in report.describe():
        click.echo(mask(line))
    for note in report.notes:
        click.echo(f"lathe: {mask(note)}", err=True)


@mcp_group.command("import")
@click.argument("path", type=click.Path(exists=True, dir_okay=False, path_type=Path))
@click.option(
    "--project",
    is_flag=True,
    help="Write the project's .lathe/config.toml instead of your user config file.",
)
@_workspace
def import_servers(path: Path, project: bool, workspace: Path) -> None:
    """Take the MCP servers of a Codex config.toml ([mcp_servers]) or a Gemini
    settings.json (mcpServers) into lathe's user config (or the project's, with
    --project). A secret written in the file is not copied: its place gets a ${VAR}
    reference, and you export the variable."""
    from lathe.config.loader import project_root, user_config_path
    from lathe.mcptools.importing import append_servers, read_foreign

    servers, replaced = read_foreign(path)
    target = project_root(workspace) / ".lathe" / "config.toml" if project else user_config_path()
    written, skipped = append_servers(target, servers)
    if written:
        click.echo(f"wrote {len(written)} MCP server(s) ({', '.join(written)}) to {target}")
    for name in skipped:
        click.echo(f"lathe: skipped {name}: {target} already has [mcp.servers.{name}]", err=True)
    for where, variable in replaced:
        if where.split(".")[2] not in written:  # mcp.servers.NAME...: a server not written
            continue
        click.echo(
            f"{where} held a secret; it now reads ${{{variable}}}: export {variable} "
            "before running lathe"
        )
    if not written and not skipped:
        click.echo(f"no MCP servers found in {path}")


@mcp_group.command("serve")
@click.option("--max-commands", type=click.IntRange(min=1),
              help="Commands running at once across all tasks (default: serve.max_commands, "
              "else the core count).")  # fmt: skip
def serve(max_commands: int | None) -> None:
    """Serve lathe to other agents and editors over MCP on stdin and stdout.

    Tools: run_task (a task in a workspace, with an optional verify command, model and
    limits; returns the status, answer, files changed and evidence, with progress
    notifications while it runs), list_sessions and session_transcript. Nothing but
    the protocol is written on stdout. The same tools are served over streamable HTTP
    at /mcp by `lathe serve`, behind its token.
    """
    from lathe.service.mcp_server import serve_stdio
    from lathe.ui.signals import sigterm_as_ctrl_c, stopped_by

    terminated: list[int] = []  # the client stopping it ends its runs as Ctrl-C does
    try:
        with sigterm_as_ctrl_c(terminated):
            serve_stdio(max_commands)
    except KeyboardInterrupt:
        said, code = stopped_by(terminated)
        click.echo(f"lathe: {said}", err=True)
        sys.exit(code)


def _declared(workspace: Path, trust_now: bool):
    from lathe.config import load_config
    from lathe.mcptools.servers import declared_servers

    return declared_servers(load_config(workspace), workspace, trust_now=trust_now)


def _redactor(declared):
    """What masks the secrets in what these commands print, as `lathe run` masks them:
    the servers' (an error quotes the URL, token and all) and the environment's."""
    from lathe.obs import Redactor

    return Redactor.for_run(declared.secrets(), os.environ)


class _Report:
    def __init__(self, name: str) -> None:
        self.name = name
        self.ok = False
        self.health = ""
        self.remote: list[dict[str, Any]] = []
        self.tools: list[Any] = []
        self.tokens = 0
        self.resources: list[str] = []
        self.prompts: list[str] = []
        self.notes: list[str] = []  # what the listing left out, and why

    def describe(self) -> list[str]:
        lines = [f"{self.name} tools ({self.tokens:,} tokens of schemas):"]
        lines += [f"  {tool.name}  {tool.one_line().split(': ', 1)[-1]}" for tool in self.tools]
        if self.resources:
            lines.append(f"{self.name} resources: {', '.join(self.resources)}")
        if self.prompts:
            lines.append(f"{self.name} prompts: {', '.join(self.prompts)}")
        from lathe.exec.terminal import visible_text

        return [visible_text(line) for line in lines]  # the server's words: no escapes


async def _probe_all(entries: list[Any], workspace: Path) -> tuple[dict[str, _Report], list[str]]:
    """Each server's report by name, and a line for each tool named apart from another
    server's (`mcptools.tools.clashes`): named in the declared order, as a run does."""

    from lathe.home import lathe_home
    from lathe.mcptools.connection import McpConnection
    from lathe.mcptools.session import schema_tokens
    from lathe.mcptools.tools import clashes, mcp_tools, offered

    connections = [McpConnection(entry, workspace, lathe_home() / "logs") for entry in entries]
    try:
        reports = await asyncio.gather(*(_probe(c) for c in connections))
    finally:
        await asyncio.gather(*(c.aclose() for c in connections), return_exceptions=True)
    named: dict[str, Any] = {}
    said: list[str] = []
    for connection, report in zip(connections, reports, strict=True):
        if not report.ok:
            continue
        report.tools = mcp_tools(connection, offered(connection.entry.config, report.remote), named)
        report.tokens = schema_tokens(report.tools) if report.tools else 0
        said += clashes(report.tools, named)
        named |= {tool.name: tool for tool in report.tools}
    return {report.name: report for report in reports}, said


async def _probe(connection: Any) -> _Report:
    from lathe.mcptools.session import remote_tool

    report = _Report(connection.name)
    started = time.monotonic()
    try:
        report.remote = [remote_tool(tool) for tool in await connection.list_tools()]
        report.notes = list(connection.listing_notes)
        elapsed = time.monotonic() - started
        report.resources = [str(r.uri) for r in await connection.list_resources()]
        report.prompts = [p.name for p in await connection.list_prompts()]
    except Exception as exc:  # McpFailure names the server and what happened
        report.health = f"failed: {exc}"
        return report
    report.ok = True
    report.health = f"ok, started in {elapsed:.1f} s ({connection.protocol})"
    return report
