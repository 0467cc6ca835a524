"""`lathe batch report RUN_DIR`: one self-contained HTML file drawn from a run folder.

The page is built here with plain string building (no template engine is a runtime
dependency): inline CSS, the charts as inline SVG, no script at all and nothing fetched —
its Content-Security-Policy forbids both, so a string that slipped past `html.escape`
still could not run. Every string from the run folder goes through `_e`.

Sections: the summary (the manifest's facts and the totals), the solve rate by kind (and
by tag when tasks have tags), the wall-time and token histograms, with `--compare` a
table of the two runs task by task, and the table of every task linking its transcript
and diff (relative links, from wherever the report is written). With `--compare OTHER`
the changes read from OTHER to RUN_DIR: "newly solved" is solved here and not there.
Elements tests look for carry a `data-testid`.
"""

from __future__ import annotations

import html
import math
import os
import urllib.parse
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from lathe.batch.results import RunFolder
from lathe.errors import UsageError
from lathe.plural import plural

_STATUSES = ("solved", "unsolved", "over_limit", "passed_before", "error")
# A task whose check passed before the agent changed anything: no measurement, so out
# of every solve rate (numerator and denominator).
_UNMEASURED = "passed_before"


def write_report(
    run_dir: Path,
    *,
    compare: Path | None = None,
    output: Path | None = None,
    warn: Callable[[str], None] = lambda problem: None,
) -> Path:
    """Write the report of `run_dir` (beside `compare`'s, task by task) to `output`
    (default RUN_DIR/report.html); the path written. A run folder without results is a
    `UsageError`; a results line that cannot be read goes to `warn` and is left out."""
    from lathe.atomic_write import write_atomic

    run = _load(run_dir, warn)
    other = _load(compare, warn) if compare is not None else None
    target = (output or run_dir / "report.html").resolve()
    if not target.parent.is_dir():
        raise UsageError(f"cannot write {target}: no such directory {target.parent}")
    page = _page(run, other, target.parent)
    try:
        write_atomic(target, page.encode("utf-8"))
    except OSError as exc:
        raise UsageError(f"cannot write {target}: {exc.strerror or exc}") from None
    return target


@dataclass
class _Run:
    path: Path
    manifest: dict[str, Any] | None
    lines: list[dict[str, Any]]  # in the task list's order, then any others as they finished

    @property
    def by_id(self) -> dict[str, dict[str, Any]]:
        return {line["id"]: line for line in self.lines}

    @property
    def model(self) -> str:
        return str(self.manifest.get("model") or "?") if self.manifest else "unknown"


def _load(run_dir: Path, warn: Callable[[str], None]) -> _Run:
    folder = RunFolder(run_dir)
    found = folder.results()
    for problem in folder.skipped:
        warn(f"{run_dir}/{problem}")
    if not found:
        raise UsageError(f"{run_dir} holds no results yet; run `lathe batch` first")
    manifest = folder.manifest()
    order = [str(i) for i in (manifest or {}).get("task_ids") or []]
    ids = [i for i in order if i in found] + [i for i in found if i not in set(order)]
    return _Run(run_dir.resolve(), manifest, [found[i] for i in ids])


# The page


def _page(run: _Run, other: _Run | None, base: Path) -> str:
    from lathe import __version__

    runs = [run] if other is None else [run, other]
    title = f"lathe batch report: {run.path.name}"
    if other is not None:
        title += f" vs {other.path.name}"
    sections = [
        f"<h1>{_e(title)}</h1>",
        _summary(runs),
        '<section class="charts">',
        _rate_chart("Solve rate by kind", "chart-solve-rate", runs, lambda line: [_kind(line)]),
    ]
    if any(line.get("tags") for r in runs for line in r.lines):
        sections.append(_rate_chart("Solve rate by tag", "chart-solve-rate-tags", runs, _tags_of))
    sections += [
        _histogram(
            "Wall time per task", "chart-time", runs, lambda line: _num(line.get("wall_s")),
            _seconds,
        ),
        _histogram("Tokens per task (in + out)", "chart-tokens", runs, _tokens, _short),
        "</section>",
    ]  # fmt: skip
    if other is not None:
        sections.append(_compare_table(run, other, base))
    sections += [
        _task_table(run, base),
        f"<footer>Written by lathe {_e(__version__)} at {_e(_now())}.</footer>",
    ]
    return (
        '<!doctype html>\n<html lang="en"><head><meta charset="utf-8">'
        '<meta http-equiv="Content-Security-Policy" '
        "content=\"default-src 'none'; style-src 'unsafe-inline'\">"
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f"<title>{_e(title)}</title><style>{_CSS}</style></head>\n<body>\n"
        + "\n".join(sections)
        + "\n</body></html>\n"
    )


def _summary(runs: list[_Run]) -> str:
    facts: list[tuple[str, list[str]]] = [
        ("Run folder", [_e(r.path) for r in runs]),
        ("Model", [_e(r.model) for r in runs]),
        ("lathe version", [_manifest_fact(r, "lathe_version") for r in runs]),
        ("Task list", [_task_list(r) for r in runs]),
        ("Executor", [_manifest_fact(r, "executor") for r in runs]),
        ("Limits per task", [_limits(r) for r in runs]),
        ("Started", [_e(_first(line.get("started") for line in r.lines)) for r in runs]),
        ("Finished", [_e(_last(line.get("finished") for line in r.lines)) for r in runs]),
    ]
    totals = [_Totals(r.lines) for r in runs]
    facts += [
        ("Solved", [f"<strong>{t.solved}/{t.n}</strong> ({t.rate})" for t in totals]),
        ("Unsolved", [str(t.count["unsolved"]) for t in totals]),
        ("Over the time limit", [str(t.count["over_limit"]) for t in totals]),
        ("Passed the check before any change (not counted)",
         [str(t.count[_UNMEASURED]) for t in totals]),
        ("Errors (not the agent's)", [_errors(t) for t in totals]),
        ("Claimed verified but failed the check", [str(t.false_verified) for t in totals]),
        ("Changed a file the check command names", [str(t.check_changed) for t in totals]),
        ("Tokens (in / out)", [_e(f"{t.tokens:,} ({t.input:,} / {t.output:,})") for t in totals]),
        ("Cost", [_e(_cost_total(t)) for t in totals]),
        ("Wall time, all tasks", [_e(_seconds(t.wall)) for t in totals]),
    ]  # fmt: skip
    head = ""
    if len(runs) > 1:
        head = "<thead><tr><th></th><th>this run</th><th>compared with</th></tr></thead>"
    rows = "".join(
        f"<tr><th>{_e(name)}</th>{''.join(f'<td>{cell}</td>' for cell in cells)}</tr>"
        for name, cells in facts
    )
    notes = "".join(
        f'<p class="notice" data-testid="no-manifest">{_e(r.path)} has no manifest.json: '
        "the model, task list and settings of this run are unknown.</p>"
        for r in runs
        if r.manifest is None
    )
    return (
        f'<section data-testid="summary"><h2>Summary</h2>{notes}'
        f'<table class="facts">{head}<tbody>{rows}</tbody></table></section>'
    )


class _Totals:
    def __init__(self, lines: list[dict[str, Any]]) -> None:
        self.n = sum(line.get("status") != _UNMEASURED for line in lines)  # the rate's
        self.count = {status: 0 for status in _STATUSES}
        self.error_kinds: dict[str, int] = {}
        self.solved = self.false_verified = self.check_changed = self.input = self.output = 0
        self.cost: float | None = None
        self.unpriced = 0  # tasks that spent tokens at no known price
        self.wall = 0.0
        for line in lines:
            status = str(line.get("status"))
            self.count[status] = self.count.get(status, 0) + 1
            if status == "error":
                kind = str(line.get("error_kind") or "unknown")
                self.error_kinds[kind] = self.error_kinds.get(kind, 0) + 1
            self.solved += bool(line.get("solved"))
            self.false_verified += bool(line.get("false_verified"))
            self.check_changed += bool(line.get("check_changed"))
            tokens = line.get("tokens") or {}
            self.input += int(tokens.get("input") or 0)
            self.output += int(tokens.get("output") or 0)
            if line.get("cost_usd") is not None:
                self.cost = (self.cost or 0.0) + float(line["cost_usd"])
            elif _tokens(line):
                self.unpriced += 1
            self.wall += _num(line.get("wall_s"))

    @property
    def tokens(self) -> int:
        return self.input + self.output

    @property
    def rate(self) -> str:
        return f"{100 * self.solved / self.n:.0f}%" if self.n else "—"


def _errors(totals: _Totals) -> str:
    kinds = ", ".join(f"{count} {kind}" for kind, count in sorted(totals.error_kinds.items()))
    return _e(f"{totals.count['error']}" + (f" ({kinds})" if kinds else ""))


def _manifest_fact(run: _Run, key: str) -> str:
    if run.manifest is None:
        return '<span class="muted">unknown (no manifest)</span>'
    return _e(run.manifest.get(key) or "—")


def _task_list(run: _Run) -> str:
    if run.manifest is None:
        return _e(f"{plural(len(run.lines), 'task')} finished; the list is unknown")
    listed = run.manifest.get("task_ids") or []
    text = f"{run.manifest.get('tasks') or '?'}: {plural(len(listed), 'task')}"
    missing = [i for i in listed if i not in run.by_id]
    if missing:
        shown = ", ".join(missing[:10]) + (", …" if len(missing) > 10 else "")
        text += f"; {len(missing)} without a result yet ({shown})"
    return _e(text)


def _limits(run: _Run) -> str:
    if run.manifest is None:
        return '<span class="muted">unknown (no manifest)</span>'
    settings = run.manifest.get("settings") or {}
    named = {"max_turns": "turns", "attempts": "attempts", "max_cost": "cost",
             "max_wall_s": "wall s"}  # fmt: skip
    parts = [f"{word} {settings[key]}" for key, word in named.items() if settings.get(key)]
    if settings.get("lathe_args"):
        parts.append("lathe args " + " ".join(map(str, settings["lathe_args"])))
    return _e(" · ".join(parts) or "none")


# Charts: inline SVG, one class a series (`s0` this run, `s1` the compared one)


def _rate_chart(
    title: str,
    testid: str,
    runs: list[_Run],
    groups_of: Callable[[dict[str, Any]], list[str]],
) -> str:
    counts: dict[str, list[list[int]]] = {}  # group -> per run [solved, n]
    for index, run in enumerate(runs):
        for line in run.lines:
            if line.get("status") == _UNMEASURED:
                continue
            for group in groups_of(line):
                cell = counts.setdefault(group, [[0, 0] for _ in runs])[index]
                cell[0] += bool(line.get("solved"))
                cell[1] += 1
    label_w, bar_w, row_h = 180, 340, 20
    rows, y = [], 4
    for group in sorted(counts):
        rows.append(f'<text class="label" x="{label_w - 8}" y="{y + 14}">{_e(group)}</text>')
        for index, (solved, n) in enumerate(counts[group]):
            if n:
                width = bar_w * solved / n
                text = f"{solved}/{n} ({100 * solved / n:.0f}%)"
                rows.append(
                    f'<rect class="track" x="{label_w}" y="{y}" width="{bar_w}" '
                    f'height="{row_h - 4}"/>'
                    f'<rect class="bar s{index}" x="{label_w}" y="{y}" width="{width:.1f}" '
                    f'height="{row_h - 4}"><title>{_e(f"{group}: {text} solved")}</title></rect>'
                    f'<text class="value" x="{label_w + bar_w + 6}" y="{y + 12}">{_e(text)}</text>'
                )
            y += row_h
        y += 6
    svg = (
        f'<svg role="img" viewBox="0 0 {label_w + bar_w + 110} {y}" '
        f'width="{label_w + bar_w + 110}" height="{y}">{"".join(rows)}</svg>'
    )
    return _figure(title, testid, svg, runs)


def _histogram(
    title: str,
    testid: str,
    runs: list[_Run],
    value_of: Callable[[dict[str, Any]], float],
    label: Callable[[float], str],
) -> str:
    values = [[value_of(line) for line in run.lines] for run in runs]
    top = max((v for series in values for v in series), default=0.0)
    total = max(len(series) for series in values)
    width = _bin_width(top, max(4, min(16, math.ceil(math.sqrt(total)) + 2)))
    bins = max(1, math.floor(top / width) + 1)
    counts = [[0] * bins for _ in runs]
    for index, series in enumerate(values):
        for value in series:
            counts[index][min(bins - 1, int(value // width))] += 1
    highest = max(max(c) for c in counts) or 1
    left, top, plot_w, plot_h = 36, 18, 560, 150
    axis = top + plot_h
    slot = plot_w / bins
    bar = max(1.0, (slot - 4) / len(runs))
    parts = [
        f'<line class="axis" x1="{left}" y1="{axis}" x2="{left + plot_w}" y2="{axis}"/>',
        f'<text class="tick" x="{left - 4}" y="{top + 4}" text-anchor="end">{highest}</text>',
        f'<text class="tick" x="{left - 4}" y="{axis}" text-anchor="end">0</text>',
    ]
    every = math.ceil(bins / 8)
    for b in range(bins + 1):
        if b % every == 0 or b == bins:
            x = left + b * slot
            parts.append(
                f'<text class="tick" x="{x:.1f}" y="{axis + 16}" text-anchor="middle">'
                f"{_e(label(b * width))}</text>"
            )
    for index, tally in enumerate(counts):
        for b, count in enumerate(tally):
            if not count:
                continue
            h = plot_h * count / highest
            x = left + b * slot + 2 + index * bar
            span = f"{label(b * width)}–{label((b + 1) * width)}"
            tip = f"{plural(count, 'task')} at {span}" + (
                f" ({runs[index].path.name})" if len(runs) > 1 else ""
            )
            parts.append(
                f'<rect class="bar s{index}" x="{x:.1f}" y="{axis - h:.1f}" '
                f'width="{bar:.1f}" height="{h:.1f}"><title>{_e(tip)}</title></rect>'
                f'<text class="count" x="{x + bar / 2:.1f}" y="{axis - h - 4:.1f}" '
                f'text-anchor="middle">{count}</text>'
            )
    svg = (
        f'<svg role="img" viewBox="0 0 {left + plot_w + 24} {axis + 24}" '
        f'width="{left + plot_w + 24}" height="{axis + 24}">{"".join(parts)}</svg>'
    )
    return _figure(title, testid, svg, runs)


def _bin_width(top: float, bins: int) -> float:
    """A round width (1, 2 or 5 times a power of ten) giving at most about `bins` bins."""
    if top <= 0:
        return 1.0
    raw = top / bins
    power = 10 ** math.floor(math.log10(raw))
    return next(step * power for step in (1, 2, 5, 10) if step * power >= raw)


def _figure(title: str, testid: str, svg: str, runs: list[_Run]) -> str:
    legend = ""
    if len(runs) > 1:
        legend = '<p class="legend">' + "".join(
            f'<span class="swatch s{i}"></span>{_e(r.path.name)} ({_e(r.model)}) '
            for i, r in enumerate(runs)
        ) + "</p>"  # fmt: skip
    return (
        f'<figure data-testid="{testid}"><figcaption>{_e(title)}</figcaption>{svg}{legend}</figure>'
    )


# Tables


def _task_table(run: _Run, base: Path) -> str:
    head = ("Task", "Kind", "Result", "lathe's status", "Turns", "Tokens", "Cost", "Wall",
            "Verify exit", "Diff", "Files", "Reason")  # fmt: skip
    rows = []
    for line in run.lines:
        tokens = line.get("tokens") or {}
        reason = _reason(line)
        cells = [
            f'<td class="id">{_e(line["id"])}</td>',
            f"<td>{_e(_kind(line))}{_tag_list(line)}</td>",
            f"<td>{_status(line)}</td>",
            f"<td>{_e(line.get('lathe_status') or '—')}</td>",
            f'<td class="num">{_e(line.get("turns") or 0)}</td>',
            f'<td class="num" title="in {_e(tokens.get("input", 0))} / out '
            f'{_e(tokens.get("output", 0))}">{_tokens(line):,}</td>',
            f'<td class="num">{_e(_cost(line.get("cost_usd")))}</td>',
            f'<td class="num">{_e(_seconds(_num(line.get("wall_s"))))}</td>',
            f'<td class="num" title="the check took {_e(_seconds(_num(line.get("verify_s"))))}">'
            f"{_e('—' if line.get('verify_exit') is None else line['verify_exit'])}</td>",
            f'<td class="nowrap">{_e(_diff_stat(line))}</td>',
            f"<td>{_links(run, line, base)}</td>",
            f'<td class="reason">{reason}</td>',
        ]
        rows.append(
            f'<tr data-testid="task-row" data-task-id="{_e(line["id"])}" '
            f'data-status="{_e(line.get("status"))}">{"".join(cells)}</tr>'
        )
    return (
        f"<section><h2>Tasks ({len(run.lines)})</h2>"
        f'<table class="tasks" data-testid="task-table"><thead><tr>'
        + "".join(f"<th>{_e(h)}</th>" for h in head)
        + f"</tr></thead><tbody>{''.join(rows)}</tbody></table></section>"
    )


def _compare_table(run: _Run, other: _Run, base: Path) -> str:
    mine, theirs = run.by_id, other.by_id
    ids = list(mine) + [i for i in theirs if i not in mine]
    rows, moves = [], {"newly-solved": 0, "newly-failed": 0}
    for task_id in ids:
        a, b = mine.get(task_id), theirs.get(task_id)
        change, text = _change(a, b)
        if change in moves:
            moves[change] += 1
        cells = [f'<td class="id">{_e(task_id)}</td>', f"<td>{_e(_kind(a or b or {}))}</td>"]
        for line, where in ((a, run), (b, other)):
            if line is None:
                cells.append('<td class="muted">not run</td>')
            else:
                link = _link(where, line.get("transcript_path"), "transcript", base)
                cells.append(f"<td>{_status(line)} {link}</td>")
        cells.append(f'<td class="change {change}">{_e(text)}</td>')
        for measure in (
            lambda line: _seconds(_num(line.get("wall_s"))),
            lambda line: f"{_tokens(line):,}",
        ):
            cells += [f'<td class="num">{_e(measure(x) if x else "—")}</td>' for x in (a, b)]
        rows.append(
            f'<tr data-testid="compare-row" data-task-id="{_e(task_id)}" '
            f'data-change="{change}">{"".join(cells)}</tr>'
        )
    names = [f"{r.path.name} ({r.model})" for r in (run, other)]
    head = ["Task", "Kind", f"This run: {names[0]}", f"Compared: {names[1]}", "Change",
            "Wall (this)", "Wall (compared)", "Tokens (this)", "Tokens (compared)"]  # fmt: skip
    moved = f"{moves['newly-solved']} newly solved, {moves['newly-failed']} newly failed"
    return (
        f"<section><h2>Task by task</h2><p>{_e(moved)}, from {_e(other.path)} "
        f"to {_e(run.path)}.</p>"
        '<table class="tasks" data-testid="compare-table"><thead><tr>'
        + "".join(f"<th>{_e(h)}</th>" for h in head)
        + f"</tr></thead><tbody>{''.join(rows)}</tbody></table></section>"
    )


def _change(a: dict[str, Any] | None, b: dict[str, Any] | None) -> tuple[str, str]:
    """How a task moved from the compared run (`b`) to this one (`a`): a class, a text."""
    if a is None:
        return "only-compared", "only in the compared run"
    if b is None:
        return "only-this", "only in this run"
    if a.get("solved") and not b.get("solved"):
        return "newly-solved", "▲ newly solved"
    if b.get("solved") and a.get("status") in ("unsolved", "over_limit"):
        return "newly-failed", "▼ newly failed"  # an error is not the agent's: "changed"
    if a.get("status") != b.get("status"):
        return "changed", f"{b.get('status')} → {a.get('status')}"
    return "same", ""


def _status(line: dict[str, Any]) -> str:
    status = str(line.get("status") or "?")
    badge = f'<span class="status {_e(status)}">{_e(status)}</span>'
    if line.get("false_verified"):
        badge += (
            ' <span class="flag" title="lathe said verified; the task\'s own check '
            'disagrees">claimed verified</span>'
        )
    if changed := line.get("check_changed"):
        names = ", ".join(map(str, changed))
        badge += (
            ' <span class="flag" data-testid="check-changed" title="the agent changed a '
            "file the task's verify command names; the check ran it as changed (it may be "
            f'the check or the fix)">changed {_e(names)}</span>'
        )
    return badge


def _reason(line: dict[str, Any]) -> str:
    if line.get("status") == "solved":
        return ""
    reason = str(line.get("reason") or "")
    if line.get("status") == "error" and line.get("error_kind"):
        reason = f"{line['error_kind']} error: {reason}"
    text = _e(reason)
    tail = str(line.get("verify_tail") or "")
    if tail and line.get("verify_exit") not in (None, 0):
        text += f"<details><summary>the check's output</summary><pre>{_e(tail)}</pre></details>"
    return text


def _links(run: _Run, line: dict[str, Any], base: Path) -> str:
    return " ".join(
        link
        for link in (
            _link(run, line.get("transcript_path"), "transcript", base),
            _link(run, line.get("diff_path"), "diff", base),
        )
        if link
    )


def _link(run: _Run, relative: Any, text: str, base: Path) -> str:
    """A link to a file of the run folder, relative to where the report is, if it exists."""
    if not relative or not (run.path / str(relative)).is_file():
        return ""
    href = urllib.parse.quote(Path(os.path.relpath(run.path / str(relative), base)).as_posix())
    return f'<a href="{_e(href)}" data-kind="{_e(text)}">{_e(text)}</a>'


def _tag_list(line: dict[str, Any]) -> str:
    tags = line.get("tags") or []
    return f'<div class="tags">{_e(", ".join(map(str, tags)))}</div>' if tags else ""


# Values


def _e(value: Any) -> str:
    return html.escape(str(value), quote=True)


def _kind(line: dict[str, Any]) -> str:
    return str(line.get("kind") or "(no kind)")


def _tags_of(line: dict[str, Any]) -> list[str]:
    return [str(tag) for tag in line.get("tags") or []] or ["(no tag)"]


def _num(value: Any) -> float:
    try:
        return float(value or 0.0)
    except (TypeError, ValueError):
        return 0.0


def _tokens(line: dict[str, Any]) -> int:
    tokens = line.get("tokens") or {}
    return int(tokens.get("input") or 0) + int(tokens.get("output") or 0)


def _diff_stat(line: dict[str, Any]) -> str:
    stat = line.get("diff_stat") or {}
    files = int(stat.get("files") or 0)
    if not files:
        return "no change"
    return f"+{stat.get('added', 0)} −{stat.get('removed', 0)} in {plural(files, 'file')}"


def _cost_total(totals: _Totals) -> str:
    """The known costs' sum, and that some are unknown (not $0) when they are."""
    if totals.cost is None or not totals.unpriced:
        return _cost(totals.cost)
    return f"{_cost(totals.cost)} + unknown"


def _cost(value: Any) -> str:
    if value is None:
        return "—"
    dollars = float(value)
    return f"${dollars:,.2f}" if dollars >= 1 else f"${dollars:.4f}"


def _seconds(value: float) -> str:
    if value < 60:
        return f"{value:.1f} s" if value < 10 and value != int(value) else f"{value:.0f} s"
    minutes, seconds = divmod(round(value), 60)
    if minutes < 60:
        return f"{minutes}m {seconds:02d}s"
    hours, minutes = divmod(minutes, 60)
    return f"{hours}h {minutes:02d}m"


def _short(value: float) -> str:
    for size, suffix in ((1e6, "M"), (1e3, "k")):
        if value >= size:
            return f"{value / size:.3g}{suffix}"
    return f"{value:.0f}"


def _first(stamps: Iterable[Any]) -> str:
    return min((str(s) for s in stamps if s), default="—")


def _last(stamps: Iterable[Any]) -> str:
    return max((str(s) for s in stamps if s), default="—")


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")


_CSS = """
body { font: 14px/1.45 system-ui, sans-serif; color: #1d232b; margin: 24px auto;
  max-width: 1280px; padding: 0 16px; }
h1 { font-size: 20px; } h2 { font-size: 16px; margin-top: 28px; }
table { border-collapse: collapse; }
th, td { padding: 4px 8px; border-bottom: 1px solid #e3e6ea; text-align: left;
  vertical-align: top; }
table.facts th { font-weight: 500; color: #55606d; }
table.tasks thead th { position: sticky; top: 0; background: #f5f7f9; }
td.num { text-align: right; font-variant-numeric: tabular-nums; white-space: nowrap; }
td.id { font-family: ui-monospace, monospace; white-space: nowrap; }
td.nowrap { white-space: nowrap; }
td.reason { max-width: 420px; overflow-wrap: anywhere; }
pre { white-space: pre-wrap; font-size: 12px; background: #f5f7f9; padding: 6px; }
.muted { color: #8a94a0; }
.notice { background: #fff6db; border: 1px solid #f0d98a; padding: 6px 10px; }
.tags { color: #6b7683; font-size: 12px; }
.status { padding: 1px 6px; border-radius: 8px; font-size: 12px; white-space: nowrap; }
.status.solved { background: #d9f2df; color: #17612c; }
.status.unsolved { background: #fbe0e0; color: #8c1d1d; }
.status.over_limit { background: #fdebd3; color: #80470b; }
.status.error { background: #e6e8ec; color: #3c4652; }
.status.passed_before { background: #efe6f7; color: #5a2d82; }
.flag { font-size: 12px; color: #8c1d1d; border: 1px solid #e2a3a3; border-radius: 8px;
  padding: 0 5px; white-space: nowrap; }
.change.newly-solved { color: #17612c; font-weight: 600; }
.change.newly-failed { color: #8c1d1d; font-weight: 600; }
.charts { display: flex; flex-wrap: wrap; gap: 12px 32px; }
figure { margin: 0; } figcaption { font-weight: 600; margin: 8px 0; }
svg { max-width: 100%; height: auto; font-size: 11px; }
svg .label { text-anchor: end; fill: #1d232b; } svg .value, svg .tick, svg .count { fill: #55606d; }
svg .track { fill: #f0f2f4; } svg .axis { stroke: #8a94a0; }
.s0 { fill: #2f6fb3; background: #2f6fb3; } .s1 { fill: #e08a2e; background: #e08a2e; }
.legend { font-size: 12px; color: #55606d; }
.swatch { display: inline-block; width: 10px; height: 10px; margin: 0 4px 0 12px; }
footer { margin-top: 32px; color: #8a94a0; font-size: 12px; }
"""
