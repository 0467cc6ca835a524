"""Turning a model's tool call into validated arguments, or into a message it can act on.

Repair is deliberately narrow: a code fence around the JSON, an empty string for "no
arguments", trailing commas, and JSON cut short (missing closing quotes, brackets or
braces) are fixed, because the intent is unambiguous. Anything else goes back to the
model as an error naming the problem, never as a guess.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel, ValidationError

_FENCE = re.compile(r"^```(?:json)?\s*(.*?)\s*```$", re.DOTALL)
_TRAILING_COMMA = re.compile(r",\s*([}\]])")


@dataclass(frozen=True)
class ParsedArguments:
    value: dict[str, Any] | None
    repaired_json: str | None = None  # set when the text had to be repaired
    error: str | None = None


def parse_arguments(raw: str) -> ParsedArguments:
    text = (raw or "").strip()
    if not text:
        return ParsedArguments({}, repaired_json="{}")
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
    return ParsedArguments(
        None,
        error=(
            f"the arguments are not valid JSON ({first_error.msg} at line "
            f"{first_error.lineno} column {first_error.colno}). Send the arguments as one "
            "JSON object matching the tool's schema, with strings quoted and escaped."
        ),
    )


def _as_object(value: Any, *, repaired: str | None) -> ParsedArguments:
    if isinstance(value, str):  # some models double-encode the object
        try:
            inner = json.loads(value)
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


def _repairs(text: str) -> list[str]:
    fenced = _FENCE.match(text)
    base = fenced.group(1) if fenced else text
    no_trailing = _TRAILING_COMMA.sub(r"\1", base)
    return [base, no_trailing, _close_truncated(no_trailing)]


def _close_truncated(text: str) -> str:
    """Append the closers a JSON text cut short is missing; unchanged if none are."""
    stack: list[str] = []
    in_string = escaped = False
    for char in text:
        if in_string:
            if escaped:
                escaped = False
            elif char == "\\":
                escaped = True
            elif char == '"':
                in_string = False
        elif char == '"':
            in_string = True
        elif char in "{[":
            stack.append("}" if char == "{" else "]")
        elif char in "}]" and (not stack or stack.pop() != char):
            return text  # mismatched, not a truncation: leave it to fail
    closing = ('"' if in_string else "") + "".join(reversed(stack))
    return text + closing


def validation_error(tool_name: str, exc: ValidationError) -> str:
    problems = []
    for err in exc.errors():
        where = ".".join(str(p) for p in err["loc"]) or "(arguments)"
        problems.append(f"{where}: {err['msg']}")
    return f"invalid arguments for {tool_name}: " + "; ".join(problems)


def validate(model: type[BaseModel], tool_name: str, value: dict[str, Any]) -> BaseModel | str:
    """The validated parameters, or an error message for the model."""
    try:
        return model.model_validate(value)
    except ValidationError as exc:
        return validation_error(tool_name, exc)
