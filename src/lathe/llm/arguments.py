"""A model's tool-call arguments as JSON text, read into an object, repaired only where
the intent is clear (`parse_arguments`): for the loop's tool calls and for calls a model
writes as text (`text_calls`).

Repair is deliberately narrow: a code fence around the JSON, an empty string for "no
arguments", trailing commas, and an object missing only its closing braces are fixed,
because the intent is unambiguous. JSON cut inside a string or a list is not: the
string may be half a line of code and the list may have lost items, so running it would
write a half change. That, and anything else, goes back to the model as an error naming
the problem, never as a guess.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from lathe.llm.base import whole_text

_FENCE = re.compile(r"^```(?:json)?\s*(.*?)\s*```$", re.DOTALL)


@dataclass(frozen=True)
class ParsedArguments:
    value: dict[str, Any] | None
    repaired_json: str | None = None  # set when the text had to be repaired
    error: str | None = None


_MAX_DEPTH = 32  # no tool's arguments nest deeper; far deeper broke serialising them


def parse_arguments(raw: str) -> ParsedArguments:
    text = (raw or "").strip()
    if not text:
        return ParsedArguments({}, repaired_json="{}")
    if _nesting(text) > _MAX_DEPTH:
        return ParsedArguments(
            None,
            error=f"the arguments are nested more than {_MAX_DEPTH} levels deep; send them "
            "as one flat JSON object matching the tool's schema.",
        )
    try:
        return _as_object(json.loads(text), repaired=None)
    except json.JSONDecodeError as exc:
        first_error = exc
    for candidate in _repairs(text):
        try:
            value = json.loads(candidate)
        except json.JSONDecodeError:
            continue
        return _as_object(value, repaired=json.dumps(value))
    if _cut_inside_a_value(text):
        return ParsedArguments(None, error=_CUT_OFF)
    return ParsedArguments(
        None,
        error=(
            f"the arguments are not valid JSON ({first_error.msg} at line "
            f"{first_error.lineno} column {first_error.colno}). Send the arguments as one "
            "JSON object matching the tool's schema, with strings quoted and escaped."
        ),
    )


def _whole_characters(value: Any) -> Any:
    """`value` with each lone surrogate in its strings as U+FFFD: JSON may escape half
    an emoji ("\\ud83d"), and no file, event or session can hold one."""
    if isinstance(value, str):
        return whole_text(value)
    if isinstance(value, dict):
        return {_whole_characters(k): _whole_characters(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_whole_characters(item) for item in value]
    return value


def _as_object(value: Any, *, repaired: str | None) -> ParsedArguments:
    value = _whole_characters(value)
    if isinstance(value, str):  # some models double-encode the object
        try:
            # The inner text gets the outer one's depth check and character repair.
            too_deep = _nesting(value) > _MAX_DEPTH
            inner = None if too_deep else _whole_characters(json.loads(value))
        except json.JSONDecodeError:
            inner = None
        if isinstance(inner, dict):
            return ParsedArguments(inner, repaired_json=json.dumps(inner))
    if not isinstance(value, dict):
        return ParsedArguments(
            None,
            error=f"the arguments must be a JSON object, got {type(value).__name__}.",
        )
    return ParsedArguments(value, repaired_json=repaired)


_CUT_OFF = (
    "the arguments were cut off inside a string or a list, so the call was not run (it "
    "would have written a half change). Send the whole call again; if it is long, make "
    "a smaller change per call."
)


def _repairs(text: str) -> list[str]:
    fenced = _FENCE.match(text)
    base = fenced.group(1) if fenced else text
    no_trailing = _without_trailing_commas(base)
    missing = _missing_closers(no_trailing)
    closed = [no_trailing + missing] if missing and _only_braces(missing) else []
    return [base, no_trailing, *closed]


def _nesting(text: str) -> int:
    """How deep the brackets of a JSON text nest, strings left out, when it could be
    deeper than `_MAX_DEPTH` (read before parsing: the parser and all after it recurse);
    else 0."""
    if text.count("[") + text.count("{") <= _MAX_DEPTH:  # most calls: counted in C
        return 0
    depth = deepest = 0
    for _, char in _JsonScan(text):
        if char in "{[":
            depth += 1
            deepest = max(deepest, depth)
        elif char in "}]":
            depth -= 1
    return deepest


def _without_trailing_commas(text: str) -> str:
    """`text` without the commas before a `}` or `]` outside its strings: a regex over
    the whole text also took the one in a string (`\\s{2,}` was written `\\s{2}`)."""
    dropped: set[int] = set()
    comma: int | None = None  # a comma only whitespace has followed
    for index, char in _JsonScan(text):
        if char in "}]" and comma is not None:
            dropped.add(comma)
        if char == ",":
            comma = index
        elif not char.isspace():
            comma = None
    return "".join(char for index, char in enumerate(text) if index not in dropped)


def _cut_inside_a_value(text: str) -> bool:
    missing = _missing_closers(text)
    return bool(missing) and not _only_braces(missing)


def _only_braces(missing: str) -> bool:
    """Whether all a cut JSON text lacks is the end of its objects (safe to close)."""
    return set(missing) == {"}"}


def _missing_closers(text: str) -> str:
    """The closers (`"`, `]`, `}`) a JSON text cut short lacks, innermost first; "" when
    none are missing or the brackets do not match (not a truncation)."""
    stack: list[str] = []
    scan = _JsonScan(text)
    for _, char in scan:
        if char in "{[":
            stack.append("}" if char == "{" else "]")
        elif char in "}]" and (not stack or stack.pop() != char):
            return ""
    return ('"' if scan.open_string else "") + "".join(reversed(stack))


class _JsonScan:
    """The characters of a JSON text outside its strings, with their indices: a
    string's opening quote (a value begins there) but nothing after it up to its end.
    Once read through, `open_string` says whether the text ended inside a string."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.open_string = False

    def __iter__(self) -> Iterator[tuple[int, str]]:
        in_string = escaped = False
        for index, char in enumerate(self.text):
            if not in_string:
                in_string = char == '"'
                yield index, char
            elif escaped:
                escaped = False
            elif char == "\\":
                escaped = True
            elif char == '"':
                in_string = False
        self.open_string = in_string
