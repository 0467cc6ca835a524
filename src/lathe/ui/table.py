"""Tables for the terminal and for pipes: `lathe sessions list`, `checkpoints list`, `stats`.

On a terminal a table fits the width (COLUMNS, else the terminal's own): columns that
must stay whole (ids, numbers, times) keep their width, flexible ones (a task's text, a
path) shrink with an ellipsis, and when that is not enough optional columns are left
out, the least useful first. A row is always one line. Piped, a list is one
tab-separated line per row, nothing cut, no header and no styling, so that
`lathe sessions list | cut -f1` (or `awk '{print $1}'`) gives the ids, and an empty list
prints nothing there (its sentence goes to stderr); a report (`lathe stats`) stays
aligned with its headers but is not cut either.
"""

from __future__ import annotations

import os
import shutil
import sys
import unicodedata
from collections.abc import Sequence
from dataclasses import dataclass

import click

_GAP = "  "


@dataclass(frozen=True)
class Column:
    """One column. `flex` columns shrink to fit, down to `min_width`, cut at the end, or
    at the start with `keep_end` (a path's last part says most); a column with `drop` > 0
    is left out when the others cannot fit, highest `drop` first."""

    header: str
    right: bool = False
    flex: bool = False
    min_width: int = 10
    keep_end: bool = False
    drop: int = 0


def terminal_width() -> int | None:
    """The width a table must fit: COLUMNS or the terminal's; None when stdout is not a
    terminal (a pipe or a file), where nothing is cut."""
    if not sys.stdout.isatty():
        return None
    return shutil.get_terminal_size().columns


def print_list(columns: Sequence[Column], rows: Sequence[Sequence[str]]) -> None:
    """A list of records: fitted with a header on a terminal, tab-separated when piped."""
    width = terminal_width()
    if width is None:
        lines = ["\t".join(_clean(cell) for cell in row) for row in rows]
    else:
        lines = aligned(columns, rows, width)
    if lines:  # one write: `sessions list` prints a line per session, a thousand or more
        click.echo("\n".join(lines))


def print_empty(sentence: str) -> None:
    """What a list with no rows prints: `sentence` on a terminal; piped, nothing on
    stdout, where `lathe sessions list | head -1 | cut -f1` would read it as an id, and
    the sentence on stderr, in lathe's voice there."""
    if terminal_width() is None:
        click.echo(f"lathe: {sentence[:1].lower()}{sentence[1:]}", err=True)
    else:
        click.echo(sentence)


def print_report_table(columns: Sequence[Column], rows: Sequence[Sequence[str]]) -> None:
    """A table in a report: aligned with its header, fitted on a terminal, whole when
    piped."""
    for line in aligned(columns, rows, terminal_width()):
        click.echo(line)


def heading(text: str) -> str:
    """A title line, bold on a terminal unless NO_COLOR is set."""
    return click.style(text, bold=True) if _styled() else text


def clip(text: str, width: int, *, keep_end: bool = False) -> str:
    """`text` in at most `width` terminal cells, an ellipsis marking what was cut."""
    text = _clean(text)
    if cell_width(text) <= width:
        return text
    mark = _ellipsis()
    room = max(width - cell_width(mark), 0)
    if keep_end:
        kept = _take(text[::-1], room)[::-1]
        return mark + kept
    return _take(text, room) + mark


def aligned(
    columns: Sequence[Column], rows: Sequence[Sequence[str]], width: int | None
) -> list[str]:
    """The header and the rows as lines of aligned columns, fitted to `width` (None:
    every cell whole)."""
    cells = [[_clean(cell) for cell in row] for row in rows]
    shown, widths = _fit(columns, cells, width)
    header = _line([columns[i].header for i in shown], [columns[i] for i in shown], widths)
    lines = [heading(header)]
    for row in cells:
        lines.append(_line([row[i] for i in shown], [columns[i] for i in shown], widths))
    return lines


def cell_width(text: str) -> int:
    """Terminal cells `text` takes: wide East Asian characters two, combining marks
    none."""
    if text.isascii():  # no ASCII character is wide or combining
        return len(text)
    return sum(_char_width(char) for char in text)


def _fit(
    columns: Sequence[Column], cells: list[list[str]], width: int | None
) -> tuple[list[int], list[int]]:
    """Which columns to show and how wide, in the order shown."""
    shown = list(range(len(columns)))
    while True:
        natural = [
            max([cell_width(columns[i].header), *(cell_width(row[i]) for row in cells)])
            for i in shown
        ]
        if width is None:
            return shown, natural
        widths = _shrink([columns[i] for i in shown], natural, width)
        if sum(widths) + len(_GAP) * (len(shown) - 1) <= width:
            return shown, widths
        optional = [i for i in shown if columns[i].drop > 0]
        if not optional:
            return shown, widths  # too narrow for even the essentials: rows run long
        shown.remove(max(optional, key=lambda i: (columns[i].drop, i)))


def _shrink(columns: Sequence[Column], natural: list[int], width: int) -> list[int]:
    """Narrow the flexible columns, widest first, until the row fits or they are at
    their minimum."""
    widths = list(natural)
    excess = sum(widths) + len(_GAP) * (len(widths) - 1) - width
    floors = [
        min(natural[k], max(cell_width(c.header), c.min_width)) if c.flex else natural[k]
        for k, c in enumerate(columns)
    ]
    while excess > 0:
        room = [k for k in range(len(widths)) if widths[k] > floors[k]]
        if not room:
            break
        widest = max(room, key=lambda k: widths[k])
        second = max((widths[k] for k in room if k != widest), default=floors[widest])
        step = min(excess, widths[widest] - max(second, floors[widest]) or 1)
        widths[widest] -= step
        excess -= step
    return widths


def _line(values: Sequence[str], columns: Sequence[Column], widths: Sequence[int]) -> str:
    parts = []
    for value, column, width in zip(values, columns, widths, strict=True):
        text = clip(value, width, keep_end=column.keep_end)
        pad = " " * (width - cell_width(text))
        parts.append(pad + text if column.right else text + pad)
    return _GAP.join(parts).rstrip()


def _clean(text: str) -> str:
    # Newlines, tabs and other control characters would split a row or a field.
    text = str(text)
    if not text.isprintable():
        text = "".join(c if c.isprintable() else " " for c in text)
    return " ".join(text.split())


def _take(text: str, width: int) -> str:
    used = 0
    for index, char in enumerate(text):
        used += _char_width(char)
        if used > width:
            return text[:index]
    return text


def _char_width(char: str) -> int:
    if unicodedata.combining(char):
        return 0
    return 2 if unicodedata.east_asian_width(char) in ("W", "F") else 1


def _ellipsis() -> str:
    encoding = (getattr(sys.stdout, "encoding", None) or "").lower().replace("-", "")
    return "…" if encoding.startswith("utf") else "..."


def _styled() -> bool:
    return sys.stdout.isatty() and not os.environ.get("NO_COLOR")
