"""`lathe stats`: what the agent spent and how its tools fared, from the session logs.

On a terminal the tables fit its width; piped, they are whole and unstyled
(`ui/table.py`); `--json` is for programs."""

from __future__ import annotations

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
    """The totals, then the tool table and the slowest calls: fitted to a terminal (the
    scope, tool names and arguments shrink, never a number or a session id), whole and
    unstyled when piped."""
    from lathe.ui.table import Column, clip, heading, print_report_table, terminal_width

    width = terminal_width()
    period = f"last {since}" if since else "all time"
    if not stats.sessions:
        click.echo(
            f"No session logs for {scope} ({period}). "
            "Runs record one next to their session; try --all."
        )
        return

    title = f"lathe stats: {{}} ({period})"
    room = None if width is None else max(width - len(title) + 2, 12)
    click.echo(heading(title.format(scope if room is None else clip(scope, room, keep_end=True))))
    for line in _summary_lines(_summary(stats), width):
        click.echo(line)

    if stats.tools:
        click.echo()
        click.echo(heading("tool calls"))
        columns = [
            Column("TOOL", flex=True, min_width=8),
            *(Column(h, right=True) for h in ("CALLS", "FAILED", "FAILURE RATE", "MEAN", "MAX")),
        ]
        rows = [
            [
                name,
                str(tool.calls),
                str(tool.failures),
                f"{tool.failure_rate:.0%}",
                _duration(tool.mean_ms),
                _duration(tool.max_ms),
            ]
            for name, tool in sorted(stats.tools.items(), key=lambda item: -item[1].calls)
        ]
        print_report_table(columns, rows)

    if stats.slowest:
        click.echo()
        click.echo(heading("slowest tool calls"))
        columns = [
            Column("DURATION", right=True),
            Column("TOOL", flex=True, min_width=6),
            Column("SESSION"),
            Column("ARGUMENTS", flex=True),
        ]
        rows = [
            [_duration(call.duration_ms), call.name, call.session, call.args]
            for call in stats.slowest
        ]
        print_report_table(columns, rows)


def _summary(stats) -> list[tuple[str, str]]:
    runs = ", ".join(f"{status} {count}" for status, count in stats.runs.most_common()) or "none"
    cost = f"${stats.cost_usd:.4f}"
    if stats.unpriced_requests:
        cost += f" (+{plural(stats.unpriced_requests, 'request')} to unpriced models)"
    tokens = (
        f"{stats.input_tokens:,} in, {stats.output_tokens:,} out"
        + (f", {stats.cache_read_tokens:,} cache reads" if stats.cache_read_tokens else "")
        + (f", {stats.cache_write_tokens:,} cache writes" if stats.cache_write_tokens else "")
    )
    requests = (
        f"{stats.requests} ({plural(stats.retries, 'retry', 'retries')}, "
        f"mean {stats.mean_latency_ms / 1000:.1f} s)"
    )
    return [
        ("sessions", str(stats.sessions)),
        ("runs", f"{sum(stats.runs.values())} ({runs})"),
        ("model requests", requests),
        ("tokens", tokens),
        ("cost", cost),
    ]


def _summary_lines(pairs: list[tuple[str, str]], width: int | None) -> list[str]:
    """`name  value` lines; on a terminal a long value wraps under itself, whole."""
    import textwrap

    indent = max(len(name) for name, _ in pairs) + 2
    lines = []
    for name, value in pairs:
        if width is None or width - indent < 20:
            lines.append(f"{name:<{indent}}{value}")
            continue
        wrapped = textwrap.wrap(value, width - indent, break_on_hyphens=False) or [""]
        lines.append(f"{name:<{indent}}{wrapped[0]}")
        lines.extend(" " * indent + rest for rest in wrapped[1:])
    return lines


def _duration(ms: float) -> str:
    return f"{ms:.0f} ms" if ms < 1000 else f"{ms / 1000:.1f} s"
