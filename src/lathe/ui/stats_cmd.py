"""`lathe stats`: what the agent spent and how its tools fared, from the session logs."""

from __future__ import annotations

import os
from datetime import UTC, datetime
from pathlib import Path

import click

from lathe.plural import plural
from lathe.ui.options import LatheCommand, workspace_option


@click.command("stats", cls=LatheCommand)
@click.option(
    "--since",
    metavar="AGE",
    help="Only what happened in the last AGE: 30m, 12h, 7d, 2w (default: everything).",
)
@click.option("--all", "all_projects", is_flag=True, help="Every workspace, not only this one.")
@workspace_option("Workspace whose sessions count (default: the current directory).")
@click.option("--json", "as_json", is_flag=True, help="Print the totals as one JSON object.")
def stats_command(since: str | None, all_projects: bool, workspace: Path, as_json: bool) -> None:
    """Tokens, cost, runs by status, tool calls and failure rates, slowest tools."""
    import json

    from lathe.home import lathe_home
    from lathe.obs.stats import collect, log_files, parse_since
    from lathe.session import SessionStore

    cutoff = datetime.now(UTC) - parse_since(since) if since else None
    store = SessionStore(lathe_home())
    workspace = workspace.expanduser().resolve()
    project = None if all_projects else store.project_dir(workspace)
    stats = collect(log_files(store.root, project), cutoff)
    if as_json:
        click.echo(json.dumps(stats.to_dict(), indent=2))
        return
    scope = "all workspaces" if all_projects else str(workspace)
    _render(stats, scope, since)


def _render(stats, scope: str, since: str | None) -> None:
    from rich.console import Console
    from rich.table import Table

    console = Console(no_color=bool(os.environ.get("NO_COLOR")), highlight=False)
    period = f"last {since}" if since else "all time"
    if not stats.sessions:
        console.print(
            f"No session logs for {scope} ({period}). "
            "Runs record one next to their session; try --all."
        )
        return

    summary = Table(title=f"lathe stats: {scope} ({period})", show_header=False, box=None)
    summary.add_column(style="bold")
    summary.add_column()
    runs = ", ".join(f"{status} {count}" for status, count in stats.runs.most_common()) or "none"
    cost = f"${stats.cost_usd:.4f}"
    if stats.unpriced_requests:
        cost += f" (+{plural(stats.unpriced_requests, 'request')} to unpriced models)"
    summary.add_row("sessions", str(stats.sessions))
    summary.add_row("runs", f"{sum(stats.runs.values())} ({runs})")
    summary.add_row(
        "model requests",
        f"{stats.requests} ({plural(stats.retries, 'retry', 'retries')}, "
        f"mean {stats.mean_latency_ms / 1000:.1f} s)",
    )
    summary.add_row(
        "tokens",
        f"{stats.input_tokens:,} in, {stats.output_tokens:,} out"
        + (f", {stats.cache_read_tokens:,} cache reads" if stats.cache_read_tokens else "")
        + (f", {stats.cache_write_tokens:,} cache writes" if stats.cache_write_tokens else ""),
    )
    summary.add_row("cost", cost)
    console.print(summary)

    if stats.tools:
        tools = Table(title="tool calls")
        for heading in ("tool", "calls", "failed", "failure rate", "mean", "max"):
            tools.add_column(heading, justify="left" if heading == "tool" else "right")
        for name, tool in sorted(stats.tools.items(), key=lambda item: -item[1].calls):
            tools.add_row(
                name,
                str(tool.calls),
                str(tool.failures),
                f"{tool.failure_rate:.0%}",
                _duration(tool.mean_ms),
                _duration(tool.max_ms),
            )
        console.print(tools)

    if stats.slowest:
        slow = Table(title="slowest tool calls")
        slow.add_column("duration", justify="right")
        slow.add_column("tool")
        slow.add_column("arguments", overflow="ellipsis", no_wrap=True, max_width=60)
        slow.add_column("session", no_wrap=True, min_width=12)
        for call in stats.slowest:
            slow.add_row(_duration(call.duration_ms), call.name, call.args, call.session)
        console.print(slow)


def _duration(ms: float) -> str:
    return f"{ms:.0f} ms" if ms < 1000 else f"{ms / 1000:.1f} s"
