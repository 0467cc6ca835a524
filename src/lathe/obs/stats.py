"""Aggregating session logs (`lathe.obs.log`) into totals: tokens, cost, runs by status,
tool calls with failure rates, and the slowest calls.

Tokens and cost are summed over `model_request` lines, so an interrupted run still
counts what it spent. Retries are the `retry` lines, one per retry a face printed: a
request whose retries ran out has no `model_request` line to carry its count. A run
that has a `run_start` and no `run_end` (a crash, kill -9) counts as `unfinished`.
Lines that do not parse are skipped: a log is never a reason for stats to fail.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from lathe.errors import UsageError
from lathe.obs.log import LOG_SUFFIX

_SINCE = re.compile(r"^\s*(\d+)\s*([mhdw])\s*$")
_UNITS = {"m": "minutes", "h": "hours", "d": "days", "w": "weeks"}


def parse_since(text: str) -> timedelta:
    """`30m`, `12h`, `7d`, `2w` → a timedelta; UsageError otherwise."""
    match = _SINCE.match(text.lower())
    if not match:
        raise UsageError(f"--since {text!r}: give a number and a unit, e.g. 30m, 12h, 7d or 2w")
    try:
        age = timedelta(**{_UNITS[match.group(2)]: int(match.group(1))})
    except OverflowError:
        return _EVERYTHING
    return min(age, _EVERYTHING)


# Older than any session can be: an age past it means everything (a bigger one
# overflowed the date arithmetic with a traceback).
_EVERYTHING = timedelta(days=365 * 100)


def log_files(sessions_root: Path, project_dir: Path | None = None) -> list[Path]:
    """Every session log under `sessions_root`, or only those of one project directory."""
    if project_dir is not None:
        return sorted(project_dir.glob(f"*{LOG_SUFFIX}")) if project_dir.is_dir() else []
    return sorted(sessions_root.glob(f"*/*{LOG_SUFFIX}")) if sessions_root.is_dir() else []


@dataclass
class ToolStats:
    calls: int = 0
    failures: int = 0
    total_ms: float = 0.0
    max_ms: float = 0.0

    @property
    def failure_rate(self) -> float:
        return self.failures / self.calls if self.calls else 0.0

    @property
    def mean_ms(self) -> float:
        return self.total_ms / self.calls if self.calls else 0.0


@dataclass(frozen=True)
class SlowCall:
    duration_ms: float
    name: str
    args: str
    session: str


@dataclass
class Stats:
    sessions: int = 0
    runs: Counter[str] = field(default_factory=Counter)
    requests: int = 0
    retries: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    cache_read_tokens: int = 0
    cache_write_tokens: int = 0
    cost_usd: float = 0.0
    unpriced_requests: int = 0  # requests to models without catalog prices
    latency_ms_total: float = 0.0
    tools: dict[str, ToolStats] = field(default_factory=dict)
    slowest: list[SlowCall] = field(default_factory=list)

    @property
    def mean_latency_ms(self) -> float:
        return self.latency_ms_total / self.requests if self.requests else 0.0

    def to_dict(self) -> dict[str, Any]:
        return {
            "sessions": self.sessions,
            "runs": dict(self.runs),
            "requests": self.requests,
            "retries": self.retries,
            "tokens": {
                "input": self.input_tokens,
                "output": self.output_tokens,
                "cache_read": self.cache_read_tokens,
                "cache_write": self.cache_write_tokens,
            },
            "cost_usd": round(self.cost_usd, 6),
            "unpriced_requests": self.unpriced_requests,
            "mean_latency_ms": round(self.mean_latency_ms, 1),
            "tools": {
                name: {
                    "calls": t.calls,
                    "failures": t.failures,
                    "failure_rate": round(t.failure_rate, 4),
                    "mean_ms": round(t.mean_ms, 1),
                    "max_ms": round(t.max_ms, 1),
                }
                for name, t in sorted(self.tools.items())
            },
            "slowest": [vars(call) for call in self.slowest],
        }


def collect(paths: Iterable[Path], since: datetime | None = None, slowest: int = 5) -> Stats:
    stats = Stats()
    calls: list[SlowCall] = []
    for path in paths:
        open_runs = 0
        seen = False
        for record in _records(path):
            if since is not None and _time(record) < since:
                continue
            seen = True
            match record.get("kind"):
                case "run_start":
                    open_runs += 1
                case "run_end":
                    open_runs = max(0, open_runs - 1)
                    stats.runs[str(record.get("status", "unknown"))] += 1
                case "model_request":
                    _add_request(stats, record)
                case "retry":
                    stats.retries += 1
                case "tool_call":
                    calls.append(_add_tool_call(stats, record))
        if open_runs:
            stats.runs["unfinished"] += open_runs
        stats.sessions += seen
    calls.sort(key=lambda call: call.duration_ms, reverse=True)
    stats.slowest = calls[:slowest]
    return stats


def _add_request(stats: Stats, record: dict[str, Any]) -> None:
    usage = record.get("usage") or {}
    stats.requests += 1
    stats.input_tokens += _int(usage.get("input_tokens"))
    stats.output_tokens += _int(usage.get("output_tokens"))
    stats.cache_read_tokens += _int(usage.get("cache_read_tokens"))
    stats.cache_write_tokens += _int(usage.get("cache_write_tokens"))
    stats.latency_ms_total += _float(record.get("latency_ms"))
    cost = record.get("cost_usd")
    if isinstance(cost, int | float):
        stats.cost_usd += cost
    else:
        stats.unpriced_requests += 1


def _add_tool_call(stats: Stats, record: dict[str, Any]) -> SlowCall:
    name = str(record.get("name", "?"))
    duration = _float(record.get("duration_ms"))
    tool = stats.tools.setdefault(name, ToolStats())
    tool.calls += 1
    tool.failures += not record.get("ok", True)
    tool.total_ms += duration
    tool.max_ms = max(tool.max_ms, duration)
    args = record.get("args") or {}
    shown = " ".join(f"{k}={v}" for k, v in args.items()) if isinstance(args, dict) else ""
    return SlowCall(duration, name, shown, str(record.get("session", "")))


def _records(path: Path) -> Iterator[dict[str, Any]]:
    try:
        with path.open(encoding="utf-8", errors="replace") as lines:
            for line in lines:
                try:
                    record = json.loads(line)
                except ValueError:
                    continue
                if isinstance(record, dict):
                    yield record
    except OSError:
        return


def _time(record: dict[str, Any]) -> datetime:
    try:
        stamp = datetime.fromisoformat(str(record.get("ts")))
    except ValueError:
        return datetime.min.replace(tzinfo=UTC)
    return stamp if stamp.tzinfo else stamp.replace(tzinfo=UTC)


def _int(value: Any) -> int:
    return value if isinstance(value, int) else 0


def _float(value: Any) -> float:
    return float(value) if isinstance(value, int | float) else 0.0
