"""Checking a tool call's arguments against its parameters, or saying what is wrong in
a message the model can act on. Reading the arguments' JSON is `llm.arguments`."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ValidationError


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
