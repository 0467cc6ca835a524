"""What `lathe batch` shows while it runs (`BatchFace`): a live display on a terminal,
plain lines otherwise; and the summary table at the end."""

from __future__ import annotations

import sys
import time
from typing import Any

from lathe.plural import plural


class _Tally:
    def __init__(self) -> None:
        self.total = 0
        self.done = 0
        self.earlier = 0
        self.solved = 0
        self.errors = 0
        self.tokens = 0
        self.cost = 0.0  # of the tasks whose cost is known
        self.unpriced = 0  # tasks whose cost is unknown (no prices): not $0
        self.running: dict[str, float] = {}
        self.started = time.monotonic()
        self.durations: list[float] = []

    def planned(self, plan: Any) -> None:
        self.total = len(plan.tasks)
        self.earlier = len(plan.done)
        self.done = self.earlier
        for line in plan.done.values():
            self._count(line)

    def finished(self, line: dict[str, Any]) -> None:
        self.running.pop(line["id"], None)
        self.done += 1
        self.durations.append(float(line.get("wall_s") or 0.0))
        self._count(line)

    def _count(self, line: dict[str, Any]) -> None:
        self.solved += bool(line.get("solved"))
        self.errors += line.get("status") == "error"
        tokens = line.get("tokens") or {}
        spent = int(tokens.get("input", 0)) + int(tokens.get("output", 0))
        self.tokens += spent
        if line.get("cost_usd") is not None:
            self.cost += float(line["cost_usd"])
        elif spent:  # a task that failed before any model call cost nothing
            self.unpriced += 1

    def eta(self, workers: int) -> str:
        left = self.total - self.done
        if not self.durations or not left:
            return "?" if left else "0s"
        mean = sum(self.durations) / len(self.durations)
        return _duration(mean * left / max(1, min(workers, left)))

    def line(self, workers: int) -> str:
        queued = self.total - self.done - len(self.running)
        return (
            f"{self.done}/{self.total} done · {len(self.running)} running · {queued} queued · "
            f"{self.solved} solved · {self.tokens:,} tokens · {self._cost()} · "
            f"ETA {self.eta(workers)}"
        )

    def _cost(self) -> str:
        """The tasks' cost: unknown, as the table's "-", or known only in part."""
        if not self.unpriced:
            return f"${self.cost:.4f}"
        if self.unpriced == self.done:
            return "cost unknown"
        return f"${self.cost:.4f} + unknown"


class PlainProgress:
    """One line when a task starts and one when it ends, on stderr."""

    def __init__(self, stream: Any = None) -> None:
        self.out = stream or sys.stderr
        self.tally = _Tally()

    def planned(self, plan: Any) -> None:
        self.tally.planned(plan)
        earlier = f", {len(plan.done)} done before" if plan.done else ""
        retried = f", {len(plan.retried)} errors run again" if plan.retried else ""
        for problem in plan.skipped:
            self._say(f"lathe: {problem}")
        self._say(
            f"batch: {plural(len(plan.tasks), 'task')}{earlier}{retried}; {len(plan.to_run)} to run"
        )

    def started(self, task: Any) -> None:
        self.tally.running[task.id] = time.monotonic()
        self._say(f"  started {task.id}")

    def finished(self, line: dict[str, Any]) -> None:
        self.tally.finished(line)
        self._say(f"  [{self.tally.done}/{self.tally.total}] {task_line(line)}")

    def stopped(self, reason: str) -> None:
        self._say(f"batch: stopped: {reason}")

    def close(self) -> None:
        self._say(f"batch: {self.tally.line(1)}")

    def _say(self, text: str) -> None:
        self.out.write(text + "\n")
        self.out.flush()


class LiveProgress(PlainProgress):
    """A rich live display: the running tasks with their time, and the totals."""

    def __init__(self, workers: int) -> None:
        from rich.console import Console
        from rich.live import Live

        super().__init__()
        self.workers = workers
        self.console = Console(stderr=True)
        self.live = Live(
            self._render(),
            console=self.console,
            refresh_per_second=4,
            transient=True,
            get_renderable=self._render,
        )
        self.live.start()

    def _say(self, text: str) -> None:
        if not text.startswith("  started"):
            self.console.print(text, markup=False, highlight=False)

    def _render(self) -> Any:
        from rich.table import Table

        table = Table.grid(padding=(0, 2))
        now = time.monotonic()
        for task_id, since in list(self.tally.running.items()):
            table.add_row(f"running {task_id}", _duration(now - since))
        table.add_row(self.tally.line(self.workers), "")
        return table

    def close(self) -> None:
        self.live.stop()
        super().close()


def task_line(line: dict[str, Any]) -> str:
    tokens = line.get("tokens") or {}
    spent = int(tokens.get("input", 0)) + int(tokens.get("output", 0))
    claim = f" ({line['lathe_status']})" if line.get("lathe_status") else ""
    warning = " — lathe said verified; the check disagrees" if line.get("false_verified") else ""
    shown = line.get("status") in ("error", "passed_before")
    reason = f": {line['reason'][:120]}" if shown else ""
    return (
        f"{line['id']}: {line['status']}{claim}{reason}{warning} · "
        f"{_duration(float(line.get('wall_s') or 0))} · {plural(line.get('turns') or 0, 'turn')}"
        f" · {spent:,} tokens"
    )


def summary_table(lines: list[dict[str, Any]], total: int | None = None) -> str:
    """The end-of-batch table, as text."""
    from lathe.ui.table import Column, aligned, terminal_width

    rows = []
    for line in lines:
        tokens = line.get("tokens") or {}
        cost = line.get("cost_usd")
        rows.append(
            [
                line["id"],
                line["status"],
                line.get("lathe_status") or "-",
                str(line.get("turns") or 0),
                f"{int(tokens.get('input', 0)) + int(tokens.get('output', 0)):,}",
                f"${cost:.4f}" if cost is not None else "-",
                _duration(float(line.get("wall_s") or 0)),
            ]
        )
    columns = [
        Column("task", flex=True),
        Column("result"),
        Column("lathe"),
        Column("turns", right=True),
        Column("tokens", right=True),
        Column("cost", right=True),
        Column("time", right=True),
    ]
    solved = sum(bool(line.get("solved")) for line in lines)
    false = sum(bool(line.get("false_verified")) for line in lines)
    errors = sum(line.get("status") == "error" for line in lines)
    # A check that passed before any change measures nothing: out of the rate.
    before = sum(line.get("status") == "passed_before" for line in lines)
    footer = f"solved {solved} of {len(lines) - before}"
    if total is not None and total > len(lines):  # a batch stopped early: the rest wait
        footer = f"solved {solved} of {total - before} · {total - len(lines)} not run yet"
    if before:
        footer += (
            f" · {before} passed its check before any change (not counted: the check may "
            "not test the task)"
        )
    if errors:
        footer += f" · {plural(errors, 'error')} (run again with --retry-errors)"
    if false:
        footer += f" · {false} claimed verified but failed the check"
    return "\n".join([*aligned(columns, rows, terminal_width()), footer])


def _duration(seconds: float) -> str:
    if seconds < 60:
        return f"{seconds:.1f}s"
    minutes, secs = divmod(int(seconds), 60)
    return f"{minutes}m{secs:02d}s" if minutes < 60 else f"{minutes // 60}h{minutes % 60:02d}m"
