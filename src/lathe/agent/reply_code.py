"""Edits implied by code in a reply: small models show a changed copy of a function in a
fenced block instead of calling `edit`.

A block counts as an edit of a workspace file only when it is unmistakably a copy of
one region of that file with some lines changed: it must share lines with the file in
one place, may not leave out more than a couple of the file's non-blank lines (elided
code would otherwise be deleted), and the resulting old text must occur in the file
exactly once. Blank lines the copy dropped stay. Anything less certain is no edit.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

_FENCE = re.compile(r"^```([^\n`]*)\n(.*?)^```[ \t]*$", re.MULTILINE | re.DOTALL)
_NOT_CODE = {"", "text", "plaintext", "console", "output", "log", "sh", "bash", "shell", "diff"}
_PATH_LIKE = re.compile(r"[\w./-]+\.\w+")
_COMMENT_PATH = re.compile(r"^\s*(?:#|//|--|/\*)\s*(?:file:\s*)?([\w./-]+\.\w+)\s*(?:\*/)?\s*$")
# "...", "# ... rest of the code", "// existing code": the copy leaves code out.
_ELISION = re.compile(
    r"^\s*(\.\.\.|…)\s*$|^\s*(#|//).*(\.\.\.|…|rest of|existing code|unchanged)", re.IGNORECASE
)
_MAX_DROPPED_LINES = 2
CALL_ID_PREFIX = "reply_code_"
"""The call ids of edits lathe made from a reply's code, so a face can say so."""
# Workspace files compared with a block when it names none: enough for the small
# projects small models are given, bounded for large ones.
_MAX_FILES = 500
_MAX_FILE_BYTES = 200_000


@dataclass(frozen=True)
class CodeBlock:
    lines: list[str]
    path_hint: str | None
    """A file the block names: in its first line's comment, its info string, or the
    line before the fence."""


@dataclass(frozen=True)
class ImpliedEdit:
    path: str
    old_string: str
    new_string: str

    def arguments(self) -> dict[str, str]:
        return {"path": self.path, "old_string": self.old_string, "new_string": self.new_string}


def code_blocks(text: str) -> list[CodeBlock]:
    """The fenced blocks of a reply that may hold code (not shell sessions or output)."""
    blocks = []
    for match in _FENCE.finditer(text):
        info = match.group(1).strip().split()
        if (info[0].lower() if info else "") in _NOT_CODE:
            continue
        lines = match.group(2).splitlines()
        hint = next((word for word in info[1:] if _PATH_LIKE.fullmatch(word)), None)
        if lines and (named := _COMMENT_PATH.match(lines[0])):
            hint, lines = named.group(1), lines[1:]
        if hint is None:
            before = text[: match.start()].rstrip().rsplit("\n", 1)[-1]
            hint = next(iter(_PATH_LIKE.findall(before)), None)
        while lines and not lines[-1].strip():
            lines.pop()
        if lines:
            blocks.append(CodeBlock(lines=lines, path_hint=hint))
    return blocks


def implied_edit(original: str, block: Sequence[str]) -> tuple[str, str] | None:
    """(old_string, new_string) when `block` is a changed copy of one region of
    `original`; None when it is no such copy, or changes nothing."""
    if any(_ELISION.match(line) for line in block):
        return None
    file_lines = original.splitlines()
    matcher = difflib.SequenceMatcher(None, file_lines, list(block), autojunk=False)
    ops = matcher.get_opcodes()
    while ops and ops[0][0] == "delete":
        ops.pop(0)
    while ops and ops[-1][0] == "delete":
        ops.pop()
    anchors = [op for op in ops if op[0] == "equal" and _substantial(file_lines[op[1] : op[2]])]
    shared = sum(i2 - i1 for _, i1, i2, _, _ in anchors)
    if not anchors or shared * 3 < sum(1 for line in block if line.strip()):
        return None
    ops = _align_edges(ops, file_lines, block)
    old_lines: list[str] = []
    new_lines: list[str] = []
    dropped = 0
    for tag, i1, i2, j1, j2 in ops:
        old_lines += file_lines[i1:i2]
        if tag == "equal":
            new_lines += file_lines[i1:i2]
        elif tag == "delete" and not _substantial(file_lines[i1:i2]):
            new_lines += file_lines[i1:i2]  # a blank line the copy skipped stays
        else:
            dropped += max(0, sum(1 for line in file_lines[i1:i2] if line.strip()) - (j2 - j1))
            new_lines += block[j1:j2]
    if dropped > _MAX_DROPPED_LINES or old_lines == new_lines:
        return None
    old, new = "\n".join(old_lines), "\n".join(new_lines)
    if original.count(old) != 1:
        return None
    return old, new


def _substantial(lines: Sequence[str]) -> bool:
    """Lines worth anchoring on: not only blanks and lone brackets."""
    return any(len(line.strip()) > 3 for line in lines)


def _align_edges(
    ops: list[tuple[str, int, int, int, int]], file_lines: list[str], block: Sequence[str]
) -> list[tuple[str, int, int, int, int]]:
    """A changed first or last line of the copy pairs with the same number of file lines
    next to the shared part, not with everything up to the file's start or end; and only
    when they look alike (a changed line): otherwise the copy's lines are added next to
    the shared part and the file's lines stay."""
    ops = list(ops)
    if ops and ops[0][0] == "replace":
        _, i1, i2, j1, j2 = ops[0]
        i1 = max(i1, i2 - (j2 - j1))
        alike = _alike(file_lines[i1:i2], block[j1:j2])
        ops[0] = ("replace", i1, i2, j1, j2) if alike else ("insert", i2, i2, j1, j2)
    if ops and ops[-1][0] == "replace":
        _, i1, i2, j1, j2 = ops[-1]
        i2 = min(i2, i1 + (j2 - j1))
        alike = _alike(file_lines[i1:i2], block[j1:j2])
        ops[-1] = ("replace", i1, i2, j1, j2) if alike else ("insert", i1, i1, j1, j2)
    return ops


def _alike(old: Sequence[str], new: Sequence[str]) -> bool:
    pairs = list(zip(old, new, strict=False))
    if not pairs:
        return False
    ratios = [difflib.SequenceMatcher(None, a.strip(), b.strip()).ratio() for a, b in pairs]
    return sum(ratios) / len(ratios) >= 0.5


def implied_edits(
    text: str,
    candidates: Sequence[str],
    read: Callable[[str], str | None],
) -> list[ImpliedEdit]:
    """One edit per block of `text` that changes exactly one file: the file it names if
    that is a candidate, else whichever candidate it uniquely fits."""
    edits = []
    for block in code_blocks(text):
        hint = block.path_hint
        named = [c for c in candidates if hint and (c == hint or c.endswith(f"/{hint}"))]
        paths = named if len(named) == 1 else list(candidates)
        fits = []
        for path in paths:
            original = read(path)
            if original is not None and (change := implied_edit(original, block.lines)):
                fits.append(ImpliedEdit(path, *change))
        if len(fits) == 1 and fits[0] not in edits:
            edits.append(fits[0])
    return edits


def workspace_edits(
    workspace: Path, text: str, *, deny_read: Sequence[str] = ()
) -> list[ImpliedEdit]:
    """`implied_edits` over the workspace's files, leaving out any a read rule denies,
    secret-like ones, and files too large to be what a reply copied from."""
    from lathe.agent.prompt import SECRET_LIKE, list_files
    from lathe.policy.rules import path_matches

    def allowed(name: str) -> bool:
        return not any(path_matches(name, pattern) for pattern in (*deny_read, *SECRET_LIKE))

    def read(name: str) -> str | None:
        path = workspace / name
        try:
            if path.stat().st_size > _MAX_FILE_BYTES:
                return None
            return path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError):
            return None

    files = [name for name in list_files(workspace) if allowed(name)]
    return implied_edits(text, files[:_MAX_FILES], read)
