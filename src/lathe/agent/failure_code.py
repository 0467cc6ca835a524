"""The code a failing check runs through, shown beside its output.

A check's output names places (`shop/cart.py:23: in apply_coupon`, `File "x.py", line 9`)
but not the code there. A large model reads those files next; the 1.5B edited from
guesses instead, copying text out of the failure. This cuts, from the files the model
may change, the functions the failure passes through, and when it fails inside a test,
the definitions that test calls, numbered as `read` numbers lines, so the next edit can
quote them exactly.
"""

from __future__ import annotations

import ast
import os
import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

# pytest's "path.py:23: in name" and "path.py:33: Error", compilers' "path:3:5: error";
# Python tracebacks' 'File "path", line 9'.
_LOCATION = re.compile(
    r'^(?P<path>[\w./\\-]+\.\w+):(?P<line>\d+):|File "(?P<tb_path>[^"]+)", line (?P<tb_line>\d+)',
    re.MULTILINE,
)
_MOST_LOCATIONS = 60
_MOST_LINES = 30
"""Lines of one piece: a longer function is shown around the line the failure names."""
_AROUND = 5
"""Lines either side of a place outside any function, or in a piece cut to fit."""


_Definition = ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef


def _span(node: _Definition) -> tuple[int, int]:
    """The first and last line of a definition, its decorators included."""
    first = min([node.lineno, *(decorator.lineno for decorator in node.decorator_list)])
    return first, node.end_lineno or node.lineno


@dataclass(frozen=True)
class _Piece:
    path: str
    first: int
    last: int
    focus: int
    """The line named; a piece cut to fit the room left is centred on it."""


def code_at_failure(
    output: str,
    workspace: Path,
    *,
    not_shown: Sequence[str],
    max_bytes: int,
    never_read: Sequence[str] = (),
) -> str:
    """Numbered pieces of the workspace files `output` names (those matching none of
    `not_shown`, the patterns of files the model may not change or should not copy
    from), in the order named, then the definitions the failing tests named in it use,
    within `max_bytes`; "" when there is none or no room. A file matching `never_read`
    (the read rules; secret-like names are added here) by its name or by the file it
    really is, is not even opened: a check can print any name."""
    from lathe.patterns import SECRET_LIKE
    from lathe.policy.rules import matches_any

    never_read = (*never_read, *SECRET_LIKE)
    sources = _Sources(workspace)
    pieces: list[_Piece] = []
    hidden: list[tuple[str, int]] = []  # places in files not shown: the tests, mostly
    for path, line in _locations(output, workspace, never_read):
        if matches_any(path, not_shown):
            hidden.append((path, line))
        else:
            pieces.append(sources.piece(path, line))
    used = _used_by(hidden, workspace, sources, (*not_shown, *never_read))
    pieces += [sources.piece(path, line, whole=True) for path, line in used]
    return _render(_unique(pieces), sources, max_bytes)


def _locations(output: str, workspace: Path, never_read: Sequence[str]) -> list[tuple[str, int]]:
    """(workspace-relative path, line) of each existing file `output` names, in order,
    but for those `never_read` matches by the name given or the real one."""
    from lathe.policy.rules import matches_any

    root = workspace.resolve()
    found: dict[tuple[str, int], None] = {}
    for match in _LOCATION.finditer(output):
        name = match.group("path") or match.group("tb_path")
        line = int(match.group("line") or match.group("tb_line"))
        path = Path(name) if Path(name).is_absolute() else root / name
        try:
            relative = path.resolve().relative_to(root)
        except (OSError, ValueError):
            continue  # outside the workspace: the interpreter's or a package's code
        if relative.parts[:1] == (".lathe",) or not (root / relative).is_file():
            continue
        given = os.path.relpath(os.path.normpath(path), root)
        if matches_any(relative.as_posix(), never_read) or matches_any(given, never_read):
            continue
        found.setdefault((relative.as_posix(), line), None)
        if len(found) >= _MOST_LOCATIONS:
            break
    return list(found)


class _Sources:
    """The workspace's files as lines, and their Python trees, each read once."""

    def __init__(self, workspace: Path) -> None:
        self._workspace = workspace
        self._lines: dict[str, list[str]] = {}
        self._trees: dict[str, ast.Module | None] = {}

    def lines(self, path: str) -> list[str]:
        if path not in self._lines:
            try:
                text = (self._workspace / path).read_text(encoding="utf-8", errors="replace")
            except OSError:
                text = ""
            self._lines[path] = text.splitlines()
        return self._lines[path]

    def tree(self, path: str) -> ast.Module | None:
        if path not in self._trees:
            tree = None
            if path.endswith(".py"):
                try:
                    tree = ast.parse("\n".join(self.lines(path)))
                except (SyntaxError, ValueError):
                    tree = None
            self._trees[path] = tree
        return self._trees[path]

    def enclosing(self, path: str, line: int) -> _Definition | None:
        """The innermost function or class holding `line` of a Python file."""
        tree = self.tree(path)
        best = None
        for node in ast.walk(tree) if tree else ():
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                first, last = _span(node)
                if first <= line <= last and (best is None or first >= _span(best)[0]):
                    best = node
        return best

    def piece(self, path: str, line: int, *, whole: bool = False) -> _Piece:
        """The function or class holding `line` (starting there when `whole`), or the
        lines around it; at most _MOST_LINES, centred on `line` when cut."""
        node = self.enclosing(path, line)
        if node is None:
            count = len(self.lines(path))
            return _Piece(path, max(1, line - _AROUND), min(count, line + _AROUND), line)
        first, last = _span(node)
        if whole:
            line = first
        if last - first < _MOST_LINES:
            return _Piece(path, first, last, line)
        start = max(first, min(line - _MOST_LINES // 2, last - _MOST_LINES + 1))
        return _Piece(path, start, min(last, start + _MOST_LINES - 1), line)


def _used_by(
    places: list[tuple[str, int]], workspace: Path, sources: _Sources, not_shown: Sequence[str]
) -> list[tuple[str, int]]:
    """Where the names the functions at `places` use, of those their files import, are
    defined in files the model may change."""
    from lathe.tools.locate import definitions, imports

    imported: dict[str, dict[str, str]] = {}  # by file: {local name: imported name}
    used: dict[str, None] = {}
    for path, line in places:
        tree, node = sources.tree(path), sources.enclosing(path, line)
        if tree is None or node is None:
            continue
        if path not in imported:
            imported[path] = imports(tree)[0]
        names = imported[path]
        for inner in ast.walk(node):
            if isinstance(inner, ast.Name) and inner.id in names:
                used.setdefault(names[inner.id], None)
    found = definitions(workspace, list(used), tuple(not_shown))
    return [found[name] for name in used if name in found]


def _unique(pieces: list[_Piece]) -> list[_Piece]:
    """`pieces` without one inside another shown before it."""
    kept: list[_Piece] = []
    for piece in pieces:
        if not any(p.path == piece.path and p.first <= piece.first and piece.last <= p.last
                   for p in kept):  # fmt: skip
            kept.append(piece)
    return kept


def _render(pieces: list[_Piece], sources: _Sources, max_bytes: int) -> str:
    """The pieces in order, numbered, each whole or else the lines around its focus that
    the room left holds (at least a few), within `max_bytes`."""
    blocks: list[str] = []
    room = max_bytes
    for piece in pieces:
        lines = sources.lines(piece.path)
        numbered = [f"{n:>6}\t{lines[n - 1]}" for n in range(piece.first, piece.last + 1)]
        first = piece.first
        if _size(piece.path, numbered) > room:
            window = _around_focus(piece, numbered, room)
            if window is None:
                continue
            first, numbered = window
        last = first + len(numbered) - 1
        block = "\n".join([f"{piece.path}, lines {first}-{last}:", *numbered])
        blocks.append(block)
        room -= len(block.encode()) + 2
    return "\n\n".join(blocks)


def _around_focus(piece: _Piece, numbered: list[str], room: int) -> tuple[int, list[str]] | None:
    """The widest stretch of `numbered` (the piece's lines) centred on its focus that
    fits in `room`, as (first line, lines); None when not even a few lines fit."""
    at = piece.focus - piece.first
    for reach in range(_MOST_LINES, 0, -1):
        start = max(0, at - reach)
        lines = numbered[start : at + reach + 1]
        if len(lines) < _AROUND:
            return None
        if _size(piece.path, lines) <= room:
            return piece.first + start, lines
    return None


def _size(path: str, numbered: list[str]) -> int:
    """Bytes of a block of `numbered` lines of `path`, with its heading and the blank
    line before the next."""
    return len(path) + 24 + sum(len(line.encode()) + 1 for line in numbered)
