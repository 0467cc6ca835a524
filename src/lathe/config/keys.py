"""Dotted key paths (`agent.max_turns`, `models."gpt-4.1".context_window`) and the shape
of the schema they walk.

Keys are written in TOML's dotted-key syntax, so a segment containing a dot is quoted,
and `-c` overrides, `config show` and error messages all use one spelling.
"""

from __future__ import annotations

import json
import re
import tomllib
from typing import Any, get_args, get_origin

from pydantic import BaseModel

from lathe.errors import UsageError

KeyPath = tuple[str, ...]
_BARE = re.compile(r"^[A-Za-z0-9_-]+$")


def format_key(path: KeyPath) -> str:
    return ".".join(part if _BARE.match(part) else json.dumps(part) for part in path)


def parse_key(text: str) -> KeyPath:
    """`a."b.c".d` -> ("a", "b.c", "d"); a UsageError for anything that is not a key."""
    problem = UsageError(f"invalid key {text!r}: expected a dotted key such as agent.max_turns")
    if not text.strip() or "\n" in text or "=" in text:
        raise problem
    try:
        node: Any = tomllib.loads(f"{text} = 0")
    except tomllib.TOMLDecodeError:
        raise problem from None
    path: list[str] = []
    while isinstance(node, dict):
        ((key, node),) = node.items()
        path.append(key)
    if path[0] == "models" and len(path) > 3:
        # Model names often hold dots (gpt-4.1) and a model entry has no sub-tables, so
        # `models.gpt-4.1.input_price` can only mean the quoted name.
        path = ["models", ".".join(path[1:-1]), path[-1]]
    return tuple(path)


def nest(path: KeyPath, value: Any) -> dict[str, Any]:
    """The nested table that sets `path` to `value`."""
    for part in reversed(path[1:]):
        value = {part: value}
    return {path[0]: value}


# A schema node: ("model", cls) for a section, ("map", node) for a table of named
# entries, ("leaf", None) for a value.
Node = tuple[str, Any]


def node_of(annotation: Any) -> Node:
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return ("model", annotation)
    if get_origin(annotation) is dict:
        return ("map", node_of(get_args(annotation)[1]))
    return ("leaf", None)


def schema_paths(cls: type[BaseModel], prefix: KeyPath = ()) -> list[KeyPath]:
    """Every key the schema knows; NAME stands for an entry of a named table."""
    paths: list[KeyPath] = []
    for name, field in cls.model_fields.items():
        path = (*prefix, name)
        kind, inner = node_of(field.annotation)
        if kind == "map" and inner[0] == "model":
            paths.extend(schema_paths(inner[1], (*path, "NAME")))
        elif kind == "model":
            paths.extend(schema_paths(inner, path))
        else:
            paths.append(path)
    return paths


def walk(value: Any, node: Node, path: KeyPath = ()) -> list[tuple[KeyPath, Any]]:
    """Leaves of an effective (validated, dumped) config; an empty table is one leaf."""
    kind, inner = node
    if kind == "leaf" or not isinstance(value, dict) or not value:
        return [(path, value)]
    out: list[tuple[KeyPath, Any]] = []
    for key, sub in value.items():
        child = node_of(inner.model_fields[key].annotation) if kind == "model" else inner
        out.extend(walk(sub, child, (*path, key)))
    return out
