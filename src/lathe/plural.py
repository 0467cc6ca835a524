"""A count with its noun in the right number, for every line lathe prints or a tool
returns: `plural(1, "line")` is "1 line", `plural(3, "line")` is "3 lines"."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from collections.abc import Sequence


def plural(count: int, noun: str, many: str | None = None) -> str:
    """`count` and `noun`, the noun singular only for exactly one; `many` is the plural
    when adding "s" is wrong (`plural(2, "entry", "entries")`). Counts of a thousand and
    more get thousands separators, as lathe's token counts do."""
    word = noun if count == 1 else (many or f"{noun}s")
    return f"{count:,} {word}"


def some_of(names: Sequence[str], most: int) -> str:
    """The first `most` of `names`, comma-separated, then how many more there are:
    `some_of(["a", "b", "c"], 2)` is "a, b and 1 more"."""
    shown = ", ".join(names[:most])
    return shown + (f" and {len(names) - most} more" if len(names) > most else "")
