"""tree-sitter-bash, and the few questions the walker asks of its syntax nodes."""

from __future__ import annotations

import functools
import re
from typing import Any

_WORD_END = frozenset(b" \t\n;&|()<>}")


@functools.lru_cache(maxsize=1)
def _language() -> Any:
    import tree_sitter
    import tree_sitter_bash

    return tree_sitter.Language(tree_sitter_bash.language())


def parse_bash(text: str) -> Any:
    import tree_sitter

    # bash joins `\<newline>` before it splits words; tree-sitter would split there.
    joined = re.sub(r"(?<!\\)((?:\\\\)*)\\\n", r"\1", text)
    parser = tree_sitter.Parser(_language())
    data = joined.encode("utf-8")
    root = parser.parse(data).root_node
    for _ in range(8):
        # tree-sitter reads `{rm,-rf,~}` as the `{` of a group; bash reads a `{` glued
        # to the next character as part of a word, which brace expansion then splits.
        # An empty `""` in front makes tree-sitter see the same word.
        glued = [n.start_byte for n in descendants(root, "{") if _glued(n, data)]
        if not root.has_error or not glued:
            break
        for start in sorted(glued, reverse=True):
            data = data[:start] + b'""' + data[start:]
        root = parser.parse(data).root_node
    return root


def _glued(node: Any, data: bytes) -> bool:
    after = data[node.end_byte : node.end_byte + 1]
    return (
        bool(after)
        and after[0] not in _WORD_END
        and node.parent is not None
        and (node.parent.type in ("ERROR", "compound_statement"))
    )


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
