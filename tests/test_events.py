"""The event model: docs/events.md describes every event and field, each provider
failure has its kind, and a tool's output is capped the same way however often."""

from __future__ import annotations

import re
import typing
from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel
from pydantic.dataclasses import is_pydantic_dataclass
from pydantic.fields import FieldInfo

from lathe import errors
from lathe.events import TOOL_OUTPUT_CHARS, AgentEvent, RunError, RunStatus, cap_output

DOC = Path(__file__).resolve().parent.parent / "docs" / "events.md"
_ROW = re.compile(r"^\| `(\w+)` \|[^|]*\| (required|optional)\b")


def _sections() -> dict[str, dict[str, str]]:
    """Each `## ` heading of docs/events.md (the name between backticks) -> its table's
    field -> "required" or "optional"."""
    sections: dict[str, dict[str, str]] = {}
    current: dict[str, str] | None = None
    for line in DOC.read_text().splitlines():
        if line.startswith("## "):
            name = re.fullmatch(r"## `(\w+)`", line)
            current = sections.setdefault(name.group(1), {}) if name else None
        elif current is not None and (row := _ROW.match(line)):
            current[row.group(1)] = row.group(2)
    return sections


def _event_classes() -> list[type[BaseModel]]:
    union = typing.get_args(AgentEvent)[0]  # Annotated[Union[...], Field(...)]
    return list(typing.get_args(union))


def _fields(model: type[Any]) -> dict[str, FieldInfo]:
    """The fields of a pydantic model or of a pydantic dataclass (the values in
    `lathe.types` are dataclasses)."""
    if issubclass(model, BaseModel):
        return model.model_fields
    return model.__pydantic_fields__


def _models_inside(annotation: object) -> list[type[Any]]:
    """The pydantic models and dataclasses a field's type refers to (through unions,
    lists, tuples)."""
    if isinstance(annotation, type) and (
        issubclass(annotation, BaseModel) or is_pydantic_dataclass(annotation)
    ):
        return [annotation]
    return [m for arg in typing.get_args(annotation) for m in _models_inside(arg)]


def _documented_models() -> dict[str, type[Any]]:
    """Every model a line of --json can hold: the events (by `type`) and the values
    inside them (by class name), however deep."""
    events = {cls: cls.model_fields["type"].default for cls in _event_classes()}
    found: dict[str, type[Any]] = {}
    pending = [(name, cls) for cls, name in events.items()]
    while pending:
        name, model = pending.pop()
        if name in found:
            continue
        found[name] = model
        for field in _fields(model).values():
            pending += [
                (events.get(inner, inner.__name__), inner)  # an event inside (a child's)
                for inner in _models_inside(field.annotation)
            ]
    return found


def test_the_union_is_walked_whole():
    names = {cls.model_fields["type"].default for cls in _event_classes()}
    assert {"run_started", "tool_finished", "run_finished"} <= names
    assert {"RunError", "Evidence", "Usage", "AssistantMessage", "ToolCall"} <= set(
        _documented_models()
    )


@pytest.mark.parametrize("name", sorted(_documented_models()))
def test_docs_events_md_describes_every_field(name):
    model = _documented_models()[name]
    sections = _sections()
    assert name in sections, f"docs/events.md has no section ## `{name}`"
    expected = {
        field: "required" if info.is_required() else "optional"
        for field, info in _fields(model).items()
        if not (field == "type" and name == info.default)  # an event's type is its heading
    }
    assert sections[name] == expected, f"## `{name}` in docs/events.md is out of date"


def test_docs_events_md_names_every_status():
    text = DOC.read_text()
    assert all(f"`{status.value}`" in text for status in RunStatus)
    assert all(f"`{kind}`" in text for kind in typing.get_args(errors.ErrorKind))


def _provider_errors(cls: type[errors.ProviderError]) -> list[type[errors.ProviderError]]:
    return [cls, *(sub for child in cls.__subclasses__() for sub in _provider_errors(child))]


def test_every_provider_error_has_a_kind_a_program_can_match():
    kinds = {cls: cls.kind for cls in _provider_errors(errors.ProviderError)}
    assert kinds == {
        errors.ProviderError: "provider",
        errors.RateLimited: "rate_limit",
        errors.Overloaded: "overloaded",
        errors.Transport: "transport",
        errors.NothingListening: "transport",
        errors.UntrustedServer: "transport",
        errors.ContextTooLong: "context_too_long",
        errors.AuthError: "auth",
        errors.BadRequest: "bad_request",
    }
    assert set(kinds.values()) == set(typing.get_args(errors.ErrorKind))


def test_a_run_error_is_made_from_the_provider_error():
    error = errors.RateLimited("rate limited (gave up)", status=429, request_id="req_1", retries=4)

    assert RunError.from_provider_error(error) == RunError(
        kind="rate_limit",
        status=429,
        request_id="req_1",
        retries=4,
        message="rate limited (gave up)",
    )


@pytest.mark.parametrize("size", [0, 10, TOOL_OUTPUT_CHARS, TOOL_OUTPUT_CHARS + 1, 10**6])
def test_a_capped_output_fits_keeps_both_ends_and_caps_to_itself(size):
    text = "".join(chr(ord("a") + i % 26) for i in range(size))

    capped = cap_output(text)

    assert len(capped) <= TOOL_OUTPUT_CHARS
    assert cap_output(capped) == capped
    if size <= TOOL_OUTPUT_CHARS:
        assert capped == text
    else:
        head, _, rest = capped.partition("\n[... ")
        count, _, tail = rest.partition(" characters left out")
        assert text.startswith(head) and text.endswith(tail.partition("...]\n")[2])
        assert int(count.replace(",", "")) == size - len(head) - len(tail.partition("...]\n")[2])


def test_the_doc_is_linked_from_the_readme_and_the_architecture():
    root = DOC.parent.parent
    assert "docs/events.md" in (root / "README.md").read_text()
    assert "events.md" in (root / "docs" / "architecture.md").read_text()
