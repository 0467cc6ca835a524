"""The front matter of a Markdown file lathe reads (a skill's SKILL.md, a prompt command).

lathe has no YAML dependency, and these files need only a few one-line values, so this
is a strict reader of a small subset, not a YAML parser: the file starts with a `---`
line, then `key: value` lines until the next `---` line. A value may be wrapped in one
pair of single or double quotes. Blank lines and `#` comments are skipped. Anything else
— an indented (nested or continued) line, a block scalar (`|`, `>`), a list, a line
with no `key:` — is a `FrontMatterError` naming the line, so a value written for a real
YAML reader is refused loudly instead of read wrongly. Keys the caller does not ask for
are skipped, nested lines under them included (Claude Code skills carry `allowed-tools`,
`license`, `metadata`, ...).
"""

from __future__ import annotations

import re
from collections.abc import Collection

_KEY_LINE = re.compile(r"([A-Za-z][A-Za-z0-9_-]*)[ \t]*:(.*)")
_FENCE = "---"
_COMMENT = re.compile(r"[ \t]#")


class FrontMatterError(ValueError):
    """The front matter cannot be read; the message names the line and the problem."""


def split_front_matter(text: str, keys: Collection[str]) -> tuple[dict[str, str], str]:
    """The values of `keys` found in the front matter, and the body after it. A text
    that does not start with a `---` line has no front matter: ({}, the whole text).
    Other keys are skipped with whatever indented lines follow them (their values are
    never read, so their YAML shape does not matter)."""
    text = text.removeprefix("\ufeff")  # a BOM an editor saved hid the front matter
    lines = text.splitlines(keepends=True)
    if not lines or lines[0].strip() != _FENCE:
        return {}, text
    values: dict[str, str] = {}
    current = ""  # the key of the last `key:` line
    for number, line in enumerate(lines[1:], start=2):
        stripped = line.strip()
        if stripped == _FENCE:
            return values, "".join(lines[number:])
        if not stripped or stripped.startswith("#"):
            continue
        if line[0] in " \t" or stripped == "-" or stripped.startswith("- "):
            # nested under the key above, or an item of its list at the left margin
            if current in keys:
                raise FrontMatterError(
                    f"line {number} continues {current!r} on an indented line; write its "
                    "value as plain text on one line"
                )
            continue
        match = _KEY_LINE.fullmatch(line.rstrip("\r\n"))
        if match is None:
            raise FrontMatterError(f"line {number} is not a `key: value` line: {stripped[:60]!r}")
        current = match.group(1)
        if current not in keys:
            continue
        if current in values:
            raise FrontMatterError(f"line {number} repeats the key {current!r}")
        values[current] = _unquote(match.group(2).strip(), number)
    raise FrontMatterError("the front matter has no closing `---` line")


def _unquote(value: str, number: int) -> str:
    if value[:1] in ("|", ">", "[", "{"):
        raise FrontMatterError(
            f"line {number}: {value[:1]!r} values (YAML blocks, lists, maps) are not read; "
            "write the value as plain text on one line"
        )
    if len(value) >= 2 and value[0] == value[-1] and value[0] in "'\"":
        inner = value[1:-1]
        if (value[0] == '"' and "\\" in inner) or (value[0] == "'" and "''" in inner):
            raise FrontMatterError(
                f"line {number}: escapes in a quoted value are not read; write the value "
                "without them (or without the quotes)"
            )
        return inner
    if value[:1] in ("'", '"'):
        raise FrontMatterError(f"line {number}: the quote around the value is not closed")
    return _COMMENT.split(value, maxsplit=1)[0].rstrip()  # YAML: ` #` starts a comment
