"""The `edit` tool: replace an exact piece of a file, which must occur exactly once.

An edit does not require a prior `read`: an exact `old_string` already proves the model
knows the text it replaces. A file the agent has seen must not have changed since,
though, because then the model's picture of the rest of the file is out of date.
"""

from __future__ import annotations

import difflib
import functools
import os
import re
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any, ClassVar

from pydantic import Field

from lathe.atomic_write import write_atomic
from lathe.errors import ToolError
from lathe.tools.base import Params, Tool, ToolContext, ToolOutput
from lathe.tools.files import (
    SHOWN_LINE_CHARS,
    ShownText,
    added_elisions,
    clip_diff,
    current_text,
    cut_line,
    cut_lines,
    load_text_file,
    os_errors,
    refuse_read_only,
    state_of,
    unified_diff,
    with_line_endings_of,
)
from lathe.tools.locate import WORD_CHARS, code_used_by, cut_side, elsewhere_note
from lathe.tools.paths import display_path, resolve_path

_REGION_CONTEXT = 2
_MAX_REGION_LINES = 30
# A file this short is shown whole when nothing in it resembles old_string: the model
# guessed at a file it has not read (the region cap keeps it within a region's size).
_WHOLE_FILE_LINES = _MAX_REGION_LINES
_MIN_SIMILARITY = 0.4
_MAX_CANDIDATES = 20
_CHAR_COMPARE_MAX = 2_000  # characters of old_string compared one by one, at most
_NUMBERED_LINE = re.compile(r"^\s*\d+\t", re.MULTILINE)


class EditParams(Params):
    path: str = Field(description="File to change, relative to the workspace root.")
    old_string: str = Field(
        description="Exact text to replace, copied from the file including indentation "
        "(without read's line numbers). It must occur exactly once unless replace_all is true."
    )
    new_string: str = Field(description="Text to put in its place.")
    replace_all: bool = Field(
        default=False, description="Replace every occurrence instead of exactly one."
    )


class EditTool(Tool):
    name: ClassVar[str] = "edit"
    brief: ClassVar[str] = "Replace old_string, copied exactly from the file, with new_string."
    description: ClassVar[str] = (
        "Replace exact text in a file. old_string must match the file exactly, once; add "
        "surrounding lines to make it unique. Returns a diff of the change."
    )
    parameters: ClassVar[type[Params]] = EditParams
    path_argument: ClassVar[str | None] = "path"

    def summarize_call(self, args: EditParams) -> str:
        return args.path

    def preview_change(self, arguments: dict[str, Any], workspace: Path) -> str | None:
        path = str(arguments.get("path", ""))
        old = current_text(workspace, path)
        find = str(arguments.get("old_string", ""))
        if old is None or not find or find not in old:
            return None
        count = -1 if arguments.get("replace_all") else 1
        new = old.replace(find, str(arguments.get("new_string", "")), count)
        return unified_diff(path, old, new, context=2)

    def refusal_hint(self, args: EditParams, ctx: ToolContext) -> str:
        """When a rule refuses the edit: if old_string is not even in that file but is
        in another, say so (the change may simply have been aimed at the wrong file); if
        it is, and an edit rule protects the file (a test), name the code it uses."""
        from lathe.policy.rules import matches_any

        try:
            path = resolve_path(ctx.workspace, args.path)
            if not path.is_file():  # missing, a folder, or a pipe that would never answer
                return ""
            named = (display_path(ctx.workspace, path), os.path.normpath(args.path))
            if any(matches_any(name, ctx.deny_read) for name in named):
                return ""  # whether old_string is in it would tell what the rule hides
            if args.old_string in path.read_text(encoding="utf-8", errors="replace"):
                shown = display_path(ctx.workspace, path)
                if not matches_any(shown, ctx.deny_edit):
                    return ""
                wanted = args.old_string + args.new_string
                used = code_used_by([path], ctx.workspace, wanted, ctx.deny_edit)
                return f"The code {shown} uses: {used}; change that instead." if used else ""
        except (ToolError, OSError):
            return ""
        return elsewhere_note(
            ctx.workspace,
            args.old_string,
            besides=path,
            unreadable=ctx.deny_read,
            unchangeable=ctx.deny_edit,
            what="old_string",
        )

    async def execute(self, args: EditParams, ctx: ToolContext) -> ToolOutput:
        if not args.old_string:
            raise ToolError(
                "old_string is empty. To create a file use write; to insert text, put the "
                "neighbouring lines in old_string and repeat them in new_string"
            )
        if args.old_string == args.new_string:
            raise ToolError(
                "old_string and new_string are identical; the edit would change nothing"
            )
        if placeholders := added_elisions(args.old_string, args.new_string):
            raise ToolError(
                f"not applied: new_string has a placeholder for left-out code "
                f"({placeholders[0]!r}) that old_string does not, so the code it stands for "
                "would be deleted. Put only the lines that change in old_string, and their "
                "complete replacement in new_string."
            )
        path = resolve_path(ctx.workspace, args.path)
        shown = display_path(ctx.workspace, path)
        with os_errors(shown, "edit"):
            return self._edit(path, shown, args, ctx)

    def _edit(self, path: Path, shown: str, args: EditParams, ctx: ToolContext) -> ToolOutput:
        data, content = load_text_file(path, shown, verb="edit")
        state_of(ctx).check_not_stale(path, shown, data)

        text = content.text
        old, new = args.old_string, args.new_string
        if content.newline == "\r\n" or "\r" not in text:
            old, new = old.replace("\r\n", "\n"), new.replace("\r\n", "\n")
        elif old not in text:
            old, new = _with_the_files_line_endings(text, old, new)
        starts = _occurrences(text, old)
        if not starts and content.bad_bytes and "\ufffd" in old:
            old, new = _as_in_the_file(ShownText(text), old, new)
            starts = _occurrences(text, old)
        if not starts:
            elsewhere = functools.partial(
                elsewhere_note, ctx.workspace, old, besides=path, unreadable=ctx.deny_read,
                unchangeable=ctx.deny_edit, what="old_string",
            )  # fmt: skip
            raise ToolError(_not_found_message(text, old, shown, elsewhere))
        if not args.replace_all:
            starts = _occurrences(text, old, overlapping=True)
        if len(starts) > 1 and not args.replace_all:
            lines = ", ".join(str(_line_of(text, i)) for i in starts[:20])
            raise ToolError(
                f"old_string occurs {len(starts)} times in {shown} (at lines {lines}). Add "
                f"surrounding lines to old_string so it matches once, or set replace_all to "
                f"true to change every occurrence"
            )
        cut = _cut_word(text, old, starts, shown)
        if cut:
            raise ToolError(cut)
        if not args.replace_all and (done := _applied_already(text, old, new, starts[0])):
            raise ToolError(
                f"not edited: {shown} already reads as new_string at line {done}, so this "
                "edit looks applied already (by an earlier call); applied again, it would "
                "insert the new text a second time. Read the file to see where it stands."
            )
        replaced = text.replace(old, new) if args.replace_all else text.replace(old, new, 1)
        updated = with_line_endings_of(text, replaced) if content.mixes_endings else replaced
        data = content.encode(updated, shown)
        refuse_read_only(path, shown)
        knew_whole = state_of(ctx).knows_whole(path)
        write_atomic(path, data)
        state_of(ctx).record(path, data, whole=knew_whole)

        diff = unified_diff(shown, text, updated)
        delta = len(new) - len(old)
        at = [_line_of(replaced, s + k * delta) for k, s in enumerate(starts[:20])]
        where = f"line {at[0]}" if len(at) == 1 else "lines " + ", ".join(map(str, at))
        count = f"{len(starts)} occurrences" if len(starts) > 1 else "1 occurrence"
        added, removed = _diff_stats(diff)
        return ToolOutput(
            content=f"Edited {shown}: replaced {count} ({where}).\n\n{clip_diff(diff)}",
            summary=f"+{added} -{removed}",
            details={"diff": cut_lines(diff), "path": shown},
        )


def _as_in_the_file(text: ShownText, old: str, new: str) -> tuple[str, str]:
    """(old, new) with the file's stray bytes where they show U+FFFD, when `old` was
    copied from how read showed the file; as they were when it was not."""
    sources: set[str] = set()
    for start in _occurrences(text.shown, old):
        span = text.span_in_text(start, start + len(old))
        if span is None:
            return old, new
        sources.add(text.text[span[0] : span[1]])
    if not sources:
        return old, new
    if len(sources) > 1:
        raise ToolError(
            "old_string matches places that differ only in bytes that are not UTF-8 "
            "(shown as \ufffd); add surrounding lines so it matches one of them"
        )
    (source,) = sources
    return source, text.put_back(new, source)


def _with_the_files_line_endings(text: str, old: str, new: str) -> tuple[str, str]:
    """In a file mixing LF and CRLF lines: (old, new) with the line endings of the one
    stretch of `text` that `old` matches when each line ending may be either, else as
    they were (the model cannot see which lines end in CR)."""
    pattern = re.escape(old.replace("\r\n", "\n")).replace("\\\n", "\r?\n")
    found = [m.group(0) for m in re.finditer(pattern, text)]
    if len(found) != 1:
        return old, new
    match = found[0]
    new = new.replace("\r\n", "\n")
    if match.count("\r\n") == match.count("\n") > 0:
        new = new.replace("\n", "\r\n")
    return match, new


def _occurrences(text: str, needle: str, *, overlapping: bool = False) -> list[int]:
    """Where `needle` starts in `text`; `overlapping`: also matches that overlap an
    earlier one (`x\nx` is in `x\nx\nx` twice, so an edit of it is ambiguous)."""
    starts: list[int] = []
    index = text.find(needle)
    while index != -1:
        starts.append(index)
        index = text.find(needle, index + (1 if overlapping else len(needle)))
    return starts


def _cut_word(text: str, old: str, starts: list[int], shown: str) -> str:
    """Why the edit is refused when an occurrence of `old` begins or ends inside a
    word of `text` (ASCII letters, digits, _), or "". The 1.5B's `if x:` matched inside
    `elif x:`, and its new lines replaced half the keyword."""
    for start in starts:
        end = start + len(old)
        side = cut_side(text, start, end)
        if not side:
            continue
        at = start if side == "starts" else end - 1
        first = at
        while first > 0 and text[first - 1] in WORD_CHARS:
            first -= 1
        last = at
        while last < len(text) and text[last] in WORD_CHARS:
            last += 1
        line_start = text.rfind("\n", 0, at) + 1
        line_end = text.find("\n", at)
        line = text[line_start : len(text) if line_end == -1 else line_end]
        quote, what = line, "the whole line"
        if len(line) > SHOWN_LINE_CHARS:  # a 5 MB minified line was quoted whole
            while start > 0 and text[start - 1] in WORD_CHARS:
                start -= 1
            while end < len(text) and text[end] in WORD_CHARS:
                end += 1
            quote, what = cut_line(text[start:end]), "old_string widened to whole words"
        return (
            f"old_string {side} inside the word `{text[first:last]}` on line "
            f"{_line_of(text, at)} of {shown}, so the edit would change part of a word. "
            f"Make old_string begin and end at whole words, e.g. {what}: `{quote}`"
        )
    return ""


def _line_of(text: str, index: int) -> int:
    return text.count("\n", 0, index) + 1


def _diff_stats(diff: str) -> tuple[int, int]:
    lines = diff.splitlines()[2:]  # past the ---/+++ header
    added = sum(1 for ln in lines if ln.startswith("+"))
    removed = sum(1 for ln in lines if ln.startswith("-"))
    return added, removed


def _not_found_message(
    text: str, old: str, shown: str, elsewhere: Callable[[], str] = lambda: ""
) -> str:
    """Why `old` is not in `text`, and the likeliest way on: where the file matches it
    but for characters the model cannot see, or whitespace; else the other files that
    hold it (`elsewhere`, asked only then: the file's own near match is likelier what
    the model meant than a copy of the text in another file); else the most similar
    region, or the whole of a short file."""
    lines = text.split("\n")
    if text.endswith("\n"):
        lines.pop()
    wanted = old.strip("\n").split("\n")
    message = f"old_string was not found in {shown}."
    if _NUMBERED_LINE.search(old):
        message += (
            " It seems to include line numbers from read; leave out the number and the tab"
            " that follows it."
        )
    if unseen := _invisible_difference(lines, wanted):
        return f"{message} {unseen}"
    start = _match_ignoring_whitespace(lines, wanted)
    if start is not None:
        region = _numbered(lines, start, start + len(wanted))
        return (
            f"{message} It matches lines {start + 1}-{start + len(wanted)} if whitespace and "
            f"indentation are ignored; the file has:\n{region}\nCopy the text exactly, "
            f"including indentation (tabs vs spaces)."
        )
    if note := elsewhere():
        return f"{message} {note}"
    best = _closest_window(lines, wanted)
    if best is None and len(lines) <= _WHOLE_FILE_LINES:
        return (
            f"{message} Nothing like it is there; the whole file ({len(lines)} lines):\n"
            f"{_numbered(lines, 0, len(lines))}\n"
            "Copy old_string exactly from these lines."
        )
    if best is None:
        return f"{message} No similar text was found; read the file to see its current content."
    first = max(0, best - _REGION_CONTEXT)
    last = min(len(lines), best + len(wanted) + _REGION_CONTEXT)
    return (
        f"{message} The most similar region is lines {first + 1}-{last}:\n"
        f"{_numbered(lines, first, last)}\n"
        f"Copy old_string exactly from the file (read it again if unsure)."
    )


def _match_ignoring_whitespace(lines: list[str], wanted: list[str]) -> int | None:
    squash = [" ".join(w.split()) for w in wanted]
    if not any(squash):
        return None
    squashed = [" ".join(line.split()) for line in lines]
    for start in range(len(lines) - len(wanted) + 1):
        if squashed[start : start + len(wanted)] == squash:
            return start
    return None


def _closest_window(lines: list[str], wanted: list[str]) -> int | None:
    """The start of the window of len(wanted) lines most like `wanted`, if any is close.

    Only windows anchored on a line resembling one of `wanted` are scored, which keeps
    this fast on large files."""
    stripped = [line.strip() for line in lines]
    targets = {w.strip(): k for k, w in enumerate(wanted) if w.strip()}
    if not targets:
        return None
    votes = Counter(j - k for j, s in enumerate(stripped) if (k := targets.get(s)) is not None)
    if not votes:
        probe = next(iter(targets))
        for near in difflib.get_close_matches(probe, stripped, n=5, cutoff=0.5):
            votes[stripped.index(near) - targets[probe]] += 1
    target = "\n".join(wanted)
    # Characters compared pairwise cost their product: past a few thousand, compare
    # lines (200 lines not found in a 20,000-line file took minutes).
    by_line = len(target) > _CHAR_COMPARE_MAX
    wanted_stripped = [w.strip() for w in wanted]
    best, best_score = None, _MIN_SIMILARITY
    for start, _ in votes.most_common(_MAX_CANDIDATES):
        start = min(max(start, 0), max(len(lines) - len(wanted), 0))
        if by_line:  # each line against its own: cheap, and near lines still score
            pairs = zip(stripped[start : start + len(wanted)], wanted_stripped, strict=False)
            score = sum(difflib.SequenceMatcher(None, a, b).quick_ratio() for a, b in pairs)
            score /= len(wanted)
        else:
            window = "\n".join(lines[start : start + len(wanted)])
            score = difflib.SequenceMatcher(None, window, target, autojunk=False).ratio()
        if score > best_score:
            best, best_score = start, score
    return best


def _numbered(lines: list[str], first: int, last: int) -> str:
    last = min(last, first + _MAX_REGION_LINES)
    return "\n".join(f"{n + 1:>6}\t{cut_line(lines[n])}" for n in range(first, last))


# Characters a model cannot see in what read shows it: zero-width ones, the soft hyphen,
# a BOM inside a line.
_INVISIBLE = dict.fromkeys(map(ord, "\u200b\u200c\u200d\u2060\ufeff\u00ad"))


def _invisible_difference(lines: list[str], wanted: list[str]) -> str:
    """Where old_string matches once Unicode normalization and invisible characters are
    set aside, the lines and the characters that differ, named; else "". The most
    similar region looked exactly like old_string, and the model could not see why."""
    import unicodedata

    def canon(text: str) -> str:
        return unicodedata.normalize("NFC", text).translate(_INVISIBLE)

    old, text = "\n".join(wanted), canon("\n".join(lines))
    at = text.find(canon(old))
    if at == -1:
        return ""
    first = text.count("\n", 0, at)
    last = first + len(wanted)
    found = "\n".join(lines[first:last])
    differ = sorted({c for c in set(found) ^ set(old) if ord(c) > 127}, key=ord)
    if not differ:
        return ""
    named = ", ".join(f"U+{ord(c):04X} ({unicodedata.name(c, 'unnamed')})" for c in differ)
    where = f"line {first + 1}" if last - first == 1 else f"lines {first + 1}-{last}"
    return (
        f"It matches {where} but for characters that look alike or show as nothing: "
        f"{named}. Copy those characters into old_string as the file has them, or match "
        "a shorter part of the line without them."
    )


def _applied_already(text: str, old: str, new: str, start: int) -> int | None:
    """The line where `text` already holds `new` around the one match of `old`, when
    `new` contains `old` (an insert): the same call sent twice had inserted twice."""
    at = new.find(old)
    while at != -1:
        begin = start - at
        if begin >= 0 and text.startswith(new, begin):
            return _line_of(text, begin)
        at = new.find(old, at + 1)
    return None
