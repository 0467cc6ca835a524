"""tree-sitter-bash, and the few questions the walker asks of its syntax nodes."""

from __future__ import annotations

import functools
import re
from typing import Any


@functools.lru_cache(maxsize=1)
def _language() -> Any:
    import tree_sitter
    import tree_sitter_bash

    return tree_sitter.Language(tree_sitter_bash.language())


def parse_bash(text: str) -> Any:
    import tree_sitter

    # bash joins `\<newline>` before it splits words; tree-sitter would split there.
    joined = re.sub(r"(?<!\\)((?:\\\\)*)\\\n", r"\1", text)
    return tree_sitter.Parser(_language()).parse(joined.encode("utf-8")).root_node


def node_text(node: Any) -> str:
    return node.text.decode("utf-8", "replace")


def descendants(node: Any, kind: str) -> list[Any]:
    found = []
    stack = list(node.children)
    while stack:
        child = stack.pop()
        if child.type == kind:
            found.append(child)
        stack.extend(child.children)
    return found


def command_name(node: Any) -> str | None:
    name = node.child_by_field_name("name")
    return None if name is None else node_text(name)


def has_ancestor(node: Any, kind: str, stop: Any) -> bool:
    parent = node.parent
    while parent is not None and parent != stop:
        if parent.type == kind:
            return True
        parent = parent.parent
    return False


def error_excerpt(root: Any) -> str:
    stack = [root]
    while stack:
        node = stack.pop(0)
        if node.type == "ERROR" or node.is_missing:
            return node_text(node)[:40] or node.type
        stack.extend(node.children)
    return node_text(root)[:40]
