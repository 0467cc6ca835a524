"""Arguments of an MCP tool, checked against the server's own JSON schema."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from lathe.mcptools.tools import _arguments_model


def test_a_mismatch_is_refused_with_the_schema():
    model = _arguments_model(
        {"type": "object", "properties": {"q": {"type": "string"}}, "required": ["q"]}
    )
    with pytest.raises(ValidationError, match=r"'q' is a required property.*JSON schema"):
        model.model_validate({})
    assert model.model_validate({"q": "x"}).q == "x"


@pytest.mark.parametrize(
    "schema",
    [
        {"type": "object", "properties": {"q": {"$ref": "#/$defs/Missing"}}},
        {"type": "object", "properties": {"q": {"$ref": "https://example.invalid/s.json"}}},
        {"type": "object", "properties": {"q": {"type": "nonsense"}}},
    ],
)
def test_a_schema_lathe_cannot_apply_leaves_the_arguments_to_the_server(schema):
    """A server's broken schema must not crash the turn: the server judges the call."""
    assert _arguments_model(schema).model_validate({"q": 1}).model_dump() == {"q": 1}
