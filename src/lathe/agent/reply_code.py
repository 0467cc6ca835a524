"""Edits implied by code in a reply: small models show a changed copy of a function in a
fenced block instead of calling `edit`.

A block counts as an edit of a workspace file only when it is unmistakably a copy of
one region of that file with some lines changed: it shares substantial lines with the
file, at least one run of them found nowhere else in the file; a changed first or last
line must look like the file line it replaces (a changed line, not new code next to the
copy); it may leave out at most one of the file's non-blank lines, no definition, and
hold no elision ("...", "# rest unchanged"); and the resulting old text occurs in the file
exactly once. Blank lines the copy dropped stay. Anything less certain is no edit.
"""

from __future__ import annotations

import asyncio
import difflib
import functools
import json
import re
import secrets
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from lathe.agent.check_files import CHECK_FILE, RUNNER_FILE_NAMES
from lathe.types import ToolCall

_FENCE = re.compile(r"^```([^\n`]*)\n(.*?)^```[ \t]*$", re.MULTILINE | re.DOTALL)
_NOT_CODE = {"", "text", "plaintext", "console", "output", "log", "sh", "bash", "shell", "diff"}
_PATH_LIKE = re.compile(r"[\w./-]+\.[A-Za-z]\w*")
_COMMENT_PATH = re.compile(r"^\s*(?:#|//|--|/\*)\s*(?:file:\s*)?([\w./-]+\.\w+)\s*(?:\*/)?\s*$")
# A line that stands for left-out code: "...", "# ... rest of the code", "/* existing */".
_ELISION = re.compile(
    r"^\s*(?:\.\.\.|…)\s*$|^\s*(?:#|//|/\*|<!--|--|\*).*"
    r"(?:\.\.\.|…|rest of|existing|unchanged|as before|as is|remaining|same as)",
    re.IGNORECASE,
)
_DEFINITION = re.compile(r"^\s*(?:async\s+)?(?:def|class|function|func|fn)\s+(\w+)")
_MAX_DROPPED_LINES = 1
# Workspace files compared with a block when it names none: enough for the small
# projects small models are given, bounded for large ones.
_MAX_FILES = 500
_MAX_FILE_BYTES = 200_000
# Never changed from prose: a test, or the test runner's configuration, the model would
# rather change could otherwise make the check pass (`addopts = "-k zero"` in
# pyproject.toml did). An edit call for them stays the model's own, visible choice.
_TEST_PATH = CHECK_FILE

Op = tuple[str, int, int, int, int]


@dataclass(frozen=True)
class CodeBlock:
    lines: list[str]
    named: str | None = None
    """A file the block names itself: in a first-line comment or the info string."""
    mentioned: tuple[str, ...] = ()
    """Path-like words on the line before the fence ("In `app/main.py`:")."""


@dataclass(frozen=True)
class ImpliedEdit:
    path: str
    old_string: str
    new_string: str

    def arguments(self) -> dict[str, str]:
        return {"path": self.path, "old_string": self.old_string, "new_string": self.new_string}


@dataclass(frozen=True)
class _Copy:
    """Where a block fits in a file: file lines [start, end), and what they become."""

    start: int
    end: int
    old_lines: list[str]
    new_lines: list[str]


def code_blocks(text: str) -> list[CodeBlock]:
    """The fenced blocks of a reply that may hold code (not shell sessions or output)."""
    blocks = []
    for match in _FENCE.finditer(text):
        info = match.group(1).strip().split()
        if (info[0].lower() if info else "") in _NOT_CODE:
            continue
        lines = match.group(2).splitlines()
        named = next((word for word in info[1:] if _PATH_LIKE.fullmatch(word)), None)
        if lines and (comment := _COMMENT_PATH.match(lines[0])):
            named, lines = comment.group(1), lines[1:]
        before = text[: match.start()].rstrip().rsplit("\n", 1)[-1]
        while lines and not lines[-1].strip():
            lines.pop()
        while lines and not lines[0].strip():
            lines.pop(0)
        if lines:
            blocks.append(CodeBlock(lines, named, tuple(_PATH_LIKE.findall(before))))
    return blocks


def implied_edit(original: str, block: Sequence[str]) -> tuple[str, str] | None:
    """(old_string, new_string) when `block` is a changed copy of one region of
    `original`; None when it is no such copy, or changes nothing."""
    copy = _fit(original, block)
    return None if copy is None else _change(original, copy)


def _change(original: str, copy: _Copy) -> tuple[str, str] | None:
    if copy.old_lines == copy.new_lines:
        return None
    old, new = "\n".join(copy.old_lines), "\n".join(copy.new_lines)
    return (old, new) if original.count(old) == 1 else None


def _fit(original: str, block: Sequence[str]) -> _Copy | None:
    if any(_ELISION.match(line) for line in block):
        return None
    file_lines = original.splitlines()
    matcher = difflib.SequenceMatcher(None, file_lines, list(block), autojunk=False)
    ops = _trim(matcher.get_opcodes(), file_lines)
    if not ops or ops[0][0] == "insert" or ops[-1][0] == "insert":
        return None  # new code before or after the copy: where it goes is a guess
    ops = _align_edges(ops, file_lines, block)
    if ops is None:
        return None
    anchors = [op for op in ops if op[0] == "equal" and _substantial(file_lines[op[1] : op[2]])]
    shared = [line for _, i1, i2, _, _ in anchors for line in file_lines[i1:i2] if line.strip()]
    if (
        len(shared) * 3 < sum(1 for line in block if line.strip())
        or (len(shared) < 2 and not any(_DEFINITION.match(line) for line in shared))
        or not any(original.count("\n".join(file_lines[i1:i2])) == 1 for _, i1, i2, _, _ in anchors)
    ):
        return None
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
            gone = file_lines[i1:i2]
            if tag == "delete" and any(_DEFINITION.match(line) for line in gone):
                return None  # a function the copy left out, not one it removes
            dropped += max(0, sum(1 for line in gone if line.strip()) - (j2 - j1))
            new_lines += block[j1:j2]
    if dropped > _MAX_DROPPED_LINES:
        return None
    return _Copy(ops[0][1], ops[-1][2], old_lines, new_lines)


def _trim(ops: list[Op], file_lines: list[str]) -> list[Op]:
    """Leave out the file beyond the copy, and blank or bracket-only lines at its edges
    (a leading blank line would otherwise pair with the file's first blank line)."""
    ops = list(ops)

    def outside(op: Op) -> bool:
        trivial = op[0] == "equal" and not _substantial(file_lines[op[1] : op[2]])
        return op[0] == "delete" or trivial

    while ops and outside(ops[0]):
        ops.pop(0)
    while ops and outside(ops[-1]):
        ops.pop()
    return ops


def _substantial(lines: Sequence[str]) -> bool:
    """Lines worth anchoring on: not only blanks and lone brackets."""
    return any(len(line.strip()) > 3 for line in lines)


def _align_edges(ops: list[Op], file_lines: list[str], block: Sequence[str]) -> list[Op] | None:
    """A changed first or last line of the copy pairs with as many file lines next to
    the shared part, not with everything up to the file's start or end; and only when
    they look alike (a changed line). Otherwise the copy is not one region: None."""
    ops = list(ops)
    if ops[0][0] == "replace":
        _, i1, i2, j1, j2 = ops[0]
        i1 = i2 - (j2 - j1)
        if i1 < ops[0][1] or not _alike(file_lines[i1:i2], block[j1:j2]):
            return None
        ops[0] = ("replace", i1, i2, j1, j2)
    if ops[-1][0] == "replace":
        _, i1, i2, j1, j2 = ops[-1]
        i2 = i1 + (j2 - j1)
        if i2 > ops[-1][2] or not _alike(file_lines[i1:i2], block[j1:j2]):
            return None
        ops[-1] = ("replace", i1, i2, j1, j2)
    return ops


def _alike(old: Sequence[str], new: Sequence[str]) -> bool:
    """Line by line, the same kind of line changed: not a new function in place of
    another, and similar text."""
    for a, b in zip(old, new, strict=True):
        defines_a, defines_b = _DEFINITION.match(a), _DEFINITION.match(b)
        if (defines_a or defines_b) and (
            not defines_a or not defines_b or defines_a.group(1) != defines_b.group(1)
        ):
            return False
    ratios = [
        difflib.SequenceMatcher(None, a.strip(), b.strip()).ratio()
        for a, b in zip(old, new, strict=True)
    ]
    return bool(ratios) and sum(ratios) / len(ratios) >= 0.5


def implied_edits(
    text: str,
    candidates: Sequence[str],
    read: Callable[[str], str | None],
) -> list[ImpliedEdit]:
    """One edit per block of `text` that changes exactly one file: the file it names
    (a block naming a file that is not a candidate is no edit), else the file the line
    before it mentions, else whichever candidate it uniquely fits. A block followed by
    another copy of the same region ("I changed this ... to this ...") is no edit."""
    fitted: list[tuple[str, str, _Copy] | None] = []
    for block in code_blocks(text):
        fits = [
            (path, original, copy)
            for path in _targets(block, candidates)
            if (original := read(path)) is not None and (copy := _fit(original, block.lines))
        ]
        fitted.append(fits[0] if len(fits) == 1 else None)
    edits = []
    for index, fit in enumerate(fitted):
        if fit is None:
            continue
        path, original, copy = fit
        superseded = any(
            later is not None and later[0] == path and _overlap(later[2], copy)
            for later in fitted[index + 1 :]
        )
        change = None if superseded else _change(original, copy)
        if change and (edit := ImpliedEdit(path, *change)) not in edits:
            edits.append(edit)
    return edits


def _targets(block: CodeBlock, candidates: Sequence[str]) -> list[str]:
    def matching(name: str) -> list[str]:
        return [c for c in candidates if c == name or c.endswith(f"/{name}")]

    if block.named:
        named = matching(block.named)
        return named if len(named) == 1 else []
    for word in block.mentioned:
        if len(mentioned := matching(word)) == 1:
            return mentioned
    return list(candidates)


def _overlap(a: _Copy, b: _Copy) -> bool:
    return a.start < b.end and b.start < a.end


def workspace_edits(
    workspace: Path, text: str, *, deny_read: Sequence[str] = (), check: str | None = None
) -> list[ImpliedEdit]:
    """`implied_edits` over the workspace's files, leaving out the check's own files
    (tests, the runner's files and configuration, and those the verify command `check`
    names, as `check_files.named_by` reads it), any file a read rule denies, secret-like
    ones, and files too large to be what a reply copied from."""
    # `python check.py`: a reply's copy of check.py asserting the wrong answer had been
    # applied, and the check it weakened passed.
    named = _named_by(check, workspace)
    files, read = _readable_files(workspace, deny_read)
    changeable = [name for name in files if not _check_file(name, named)]
    return implied_edits(text, changeable[:_MAX_FILES], read)


def shown_code_note(
    workspace: Path,
    text: str,
    *,
    deny_edit: Sequence[str] = (),
    deny_read: Sequence[str] = (),
    check: str | None = None,
) -> str | None:
    """What to tell the model of the code blocks of a reply lathe did not apply, by the
    file each copies (`_fit`, over the files it may read, tests too): None when nothing
    speaks against "code in a reply changes no file" (a block copies no file, or changes
    one it may change); "" when each block's code is already in the file it copies (the
    model repeats code lathe applied before); else, when a block is a changed copy of a
    file an edit rule (`deny_edit`) or the check forbids changing (a test), a sentence
    naming that file and the code it uses (`locate.code_used_by`), as a refused edit's
    hint does: the model is not sent to an edit that would be refused."""
    from lathe.policy.rules import matches_any
    from lathe.tools.locate import code_used_by

    blocks = code_blocks(text)
    if not blocks:
        return None
    named = _named_by(check, workspace)
    files, read = _readable_files(workspace, deny_read)
    files = files[:_MAX_FILES]

    def unchangeable(path: str) -> bool:
        return _check_file(path, named) or matches_any(path, deny_edit)

    protected: list[tuple[str, str]] = []  # (file, the block's code)
    for block in blocks:
        code = "\n".join(block.lines)
        targets = [(path, held) for path in _targets(block, files) if (held := read(path))]
        if any(f"\n{code}\n" in f"\n{original}\n" for _, original in targets):
            continue  # already in the file, line for line
        fits = [(path, copy) for path, original in targets if (copy := _fit(original, block.lines))]
        if any(copy.old_lines == copy.new_lines for _, copy in fits):
            continue  # already there, but for blank lines
        copied = [path for path, _ in fits]
        if not copied or not all(map(unchangeable, copied)):
            return None
        protected.append((copied[0], code))
    if not protected:
        return ""
    path, code = protected[0]
    if matches_any(path, deny_edit):
        why = "which you may not change"
    else:
        why = "which is part of the check, not the code it tests"
    used = code_used_by([workspace / path], workspace, code, tuple(deny_edit))
    instead = (
        f"The code it uses: {used}; change that with the edit tool."
        if used
        else "Change the code it tests with the edit tool."
    )
    return f"Your reply shows a changed copy of {path}, {why}. {instead}"


def _named_by(check: str | None, workspace: Path) -> set[str]:
    from lathe.agent.check_files import named_by

    return set(named_by(check, workspace)) if check else set()


def _check_file(name: str, named: set[str]) -> bool:
    """Whether a workspace file is part of the check: a test, the runner's files and
    configuration, or one the verify command names (`named`)."""
    return bool(_TEST_PATH.search(name)) or name in named or Path(name).name in RUNNER_FILE_NAMES


def _readable_files(
    workspace: Path, deny_read: Sequence[str]
) -> tuple[list[str], Callable[[str], str | None]]:
    """The workspace's files a reply may be compared with (none a read rule denies, none
    secret-like), and how each is read: None when too large to be what a reply copied
    from, or not text."""
    from lathe.agent.prompt import SECRET_LIKE, list_files
    from lathe.policy.rules import matches_any

    @functools.cache  # a reply with several blocks compares each with the same files
    def read(name: str) -> str | None:
        path = workspace / name
        try:
            if path.stat().st_size > _MAX_FILE_BYTES:
                return None
            return path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError):
            return None

    files = [n for n in list_files(workspace) if not matches_any(n, (*deny_read, *SECRET_LIKE))]
    return files, read


def edit_calls_for(
    workspace: Path,
    *,
    deny_read: Sequence[str] = (),
    check: str | None = None,
    tool: str = "edit",
) -> Callable[[str, int], Awaitable[list[ToolCall]]]:
    """What the verify gate calls after a failed check (`verify.ReplyCodeCalls`): the
    `tool` calls (an exact-replacement edit tool) for the code a reply shows, none of
    them on a file of the verify command `check` (`workspace_edits`). Matching reads
    files, so it runs off the event loop."""

    async def calls(text: str, turn: int) -> list[ToolCall]:
        edits = await asyncio.to_thread(
            workspace_edits, workspace, text, deny_read=deny_read, check=check
        )
        run = secrets.token_hex(3)  # ids stay unique across the runs of one conversation
        return [
            ToolCall(id=f"lathe_{run}_{turn}_{n}", name=tool, arguments=json.dumps(e.arguments()))
            for n, e in enumerate(edits, 1)
        ]

    return calls


def one_change_each(calls: Sequence[ToolCall], most: int) -> list[ToolCall]:
    """`calls` (exact-replacement edits, as `edit_calls_for` makes them) as one call per
    separate change they make, each a run of changed lines with unchanged ones around
    it: the same old text, with only that change made. To try them one at a time when
    all of them together made the check worse (a copy of a file that fixes one function
    and rewrites another). Empty when there are fewer than two changes or more than
    `most`, or a call is not such an edit."""
    parts: list[ToolCall] = []
    for call in calls:
        try:
            arguments = json.loads(call.arguments)
            old, new = arguments["old_string"], arguments["new_string"]
        except (ValueError, KeyError, TypeError):
            return []
        if not isinstance(old, str) or not isinstance(new, str):
            return []
        old_lines, new_lines = old.splitlines(keepends=True), new.splitlines(keepends=True)
        matcher = difflib.SequenceMatcher(None, old_lines, new_lines, autojunk=False)
        changes = [op for op in matcher.get_opcodes() if op[0] != "equal"]
        for n, (_, i1, i2, j1, j2) in enumerate(changes, 1):
            made = "".join(old_lines[:i1] + new_lines[j1:j2] + old_lines[i2:])
            one = {**arguments, "new_string": made}
            parts.append(ToolCall(id=f"{call.id}_{n}", name=call.name, arguments=json.dumps(one)))
        if len(parts) > most:
            return []
    return parts if len(parts) > 1 else []


class FilesBefore:
    """The bytes of the files some edit calls are about to change, to put back should
    the edits make things worse (the verify gate's revert)."""

    def __init__(self, workspace: Path, calls: Sequence[ToolCall], file_state) -> None:
        """`file_state`: the run's `tools.files.FileState`, told of what is put back so
        the model's next edit of the file is not refused as stale."""
        from lathe.errors import ToolError
        from lathe.tools.paths import resolve_path

        self._file_state = file_state
        self._saved: dict[Path, bytes] = {}
        for call in calls:
            try:
                path = resolve_path(workspace, str(json.loads(call.arguments)["path"]))
                self._saved.setdefault(path, path.read_bytes())
            except (ToolError, OSError, ValueError, KeyError, TypeError):
                continue  # the edit of such a path fails and changes nothing

    def restore(self) -> None:
        from lathe.atomic_write import write_atomic

        for path, data in self._saved.items():
            whole = self._file_state.knows_whole(path)
            write_atomic(path, data)
            self._file_state.record(path, data, whole=whole)
