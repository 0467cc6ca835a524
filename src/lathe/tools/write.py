"""The `write` tool: create a file, or replace one the agent has read.

Replacing a file requires that the agent read (or wrote) it in this session and that it
has not changed since: a whole-file write from memory is how work gets lost. An
overwrite keeps the old file's encoding, BOM and line endings.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any, ClassVar

from pydantic import Field

from lathe.atomic_write import write_atomic
from lathe.errors import ToolError, ToolRefusal
from lathe.plural import plural
from lathe.tools.base import Params, Tool, ToolContext, ToolOutput
from lathe.tools.capping import line_part
from lathe.tools.files import (
    ShownText,
    added_elisions,
    clip_diff,
    count_lines,
    current_text,
    cut_lines,
    decode_text,
    os_errors,
    refuse_read_only,
    state_of,
    unified_diff,
    with_line_endings_of,
)
from lathe.tools.paths import display_path, refuse_special, resolve_path


class WriteParams(Params):
    path: str = Field(description="File to write, relative to the workspace root.")
    content: str = Field(description="The complete new content of the file.")


class WriteTool(Tool):
    name: ClassVar[str] = "write"
    brief: ClassVar[str] = "Create a file with the given content."
    description: ClassVar[str] = (
        "Create a file with the given content (parent directories are created). To replace "
        "an existing file you must read it first; for a change to part of a file use edit."
    )
    parameters: ClassVar[type[Params]] = WriteParams
    path_argument: ClassVar[str | None] = "path"

    def preview_change(self, arguments: dict[str, Any], workspace: Path) -> str | None:
        path = str(arguments.get("path", ""))
        old = current_text(workspace, path)
        if old is None:
            return None
        return unified_diff(path, old, str(arguments.get("content", "")), context=2)

    def summarize_call(self, args: WriteParams) -> str:
        return args.path

    async def execute(self, args: WriteParams, ctx: ToolContext) -> ToolOutput:
        _refuse_folder_form(args.path)
        path = resolve_path(ctx.workspace, args.path)
        shown = display_path(ctx.workspace, path)
        with os_errors(shown, "write"):
            return self._write(path, shown, args, ctx)

    def _write(self, path: Path, shown: str, args: WriteParams, ctx: ToolContext) -> ToolOutput:
        if path.is_dir():
            raise ToolError(f"{shown} is a directory; give a file path to write")
        refuse_special(path, shown)
        lines = plural(count_lines(args.content), "line")
        if not path.exists():
            path.parent.mkdir(parents=True, exist_ok=True)
            data = args.content.encode("utf-8")
            write_atomic(path, data)
            state_of(ctx).record(path, data)
            return ToolOutput(
                content=f"Created {shown} ({lines}).",
                summary=f"created, {lines}",
                details={"path": shown, "created": True},
            )

        if not ctx.limits.write_may_replace:
            raise ToolRefusal(_use_edit_instead(path, shown, args.content))
        state = state_of(ctx)
        if not state.was_seen(path):
            raise ToolError(
                f"{shown} already exists and you have not read it in this session. Read it "
                f"first, then use edit to change part of it (or write to replace it whole)"
            )
        if not state.knows_whole(path):
            raise ToolError(
                f"{shown} already exists and you have not read all of it "
                f"({state.lines_shown(path)}), so a whole-file write would lose what you "
                "have not seen. To change part of it, use edit; "
                + _to_know_it_whole(path, shown, ctx.limits.read_max_line_chars)
            )
        refuse_read_only(path, shown)
        before = path.read_bytes()
        state_of(ctx).check_not_stale(path, shown, before)
        old = decode_text(before)
        new_elisions = added_elisions(old.text if old else "", args.content)
        if new_elisions:
            raise ToolError(
                f"not written: the new content of {shown} has a placeholder for left-out "
                f"code ({new_elisions[0]!r}), and write replaces the whole file, so "
                "that code would be lost. Use edit to change just the part you mean, or "
                "write the complete file."
            )
        # A CRLF file gets CRLF back from encode; any other keeps the content's own.
        crlf = old is not None and old.newline == "\r\n"
        new_text = args.content.replace("\r\n", "\n") if crlf else args.content
        if old is None:
            data, old_text = args.content.encode("utf-8"), ""
        else:
            if old.mixes_endings:
                new_text = with_line_endings_of(old.text, new_text)
            if old.bad_bytes:
                new_text = ShownText(old.text).with_own_lines(new_text, shown)
                _refuse_replacement_chars(new_text, old.text, shown)
            data, old_text = old.encode(new_text, shown), old.text
        write_atomic(path, data)
        state_of(ctx).record(path, data)
        diff = unified_diff(shown, old_text, new_text)
        was = "" if old is None else f", was {count_lines(old_text)}"
        return ToolOutput(
            content=f"Overwrote {shown} ({lines}{was}).\n\n{clip_diff(diff)}",
            summary=f"overwritten, {lines}",
            details={"path": shown, "created": False, "diff": cut_lines(diff)},
        )


def _refuse_folder_form(given: str) -> None:
    """ToolError when `given` names a folder by its form: it ends in "/" (or "/." or
    "/.."). Resolved, it loses that ending, and `newdir/` was created as a file named
    `newdir`, in the way of the folder the model meant."""
    path = given.strip()
    last = path.replace(os.sep, "/").rsplit("/", 1)[-1]
    if path and last in ("", ".", ".."):
        raise ToolError(
            f"{path} names a folder, not a file; give the path of the file to write "
            "(its folders are created as needed)"
        )


_MAX_SUGGESTED_LINES = 30


def _to_know_it_whole(path: Path, shown: str, max_chars: int) -> str:
    """How to see the rest of a file before replacing it whole: read, unless a line is
    longer than read shows (it said "read the rest first" of a file read cannot show)."""
    content = decode_text(path.read_bytes())
    lines = content.text.split("\n") if content else []
    long = next((n for n, line in enumerate(lines, 1) if len(line) > max_chars), None)
    if long is None:
        return "to replace it whole, read the rest first"
    command = line_part(shown, long, max_chars + 1)
    return (
        f"line {long} is longer than read shows ({len(lines[long - 1]):,} characters), so "
        f"read cannot show all of it: see the rest with bash, e.g. `{command}`, and change "
        f"the file with edit"
    )


def _use_edit_instead(path: Path, shown: str, content: str) -> str:
    """Why write refuses to replace `path`, and the edit call that makes the same
    change when the new content differs from the file in one short stretch (small
    models asked for edit after this refusal kept calling write; shown the call, they
    can copy it)."""
    refused = f"{shown} already exists; write only creates new files here."
    current = decode_text(path.read_bytes()) if path.is_file() else None
    if current is None:
        return f"{refused} Change it with edit (an exact old_string and its replacement)."
    new = content.replace("\r\n", "\n")
    change = suggested_edit(current.text, new)
    if change is None:
        import difflib

        same = difflib.SequenceMatcher(None, current.text, new, autojunk=False).ratio()
        where = "would replace most of it" if same < 0.5 else "differs from it in several places"
        return (
            f"{refused} Your content {where}: change only the lines that need it, each with "
            "edit (an exact old_string copied from the file, and its replacement)."
        )
    if change == ("", ""):
        return f"{refused} Your content is what the file already holds: nothing to change."
    call = json.dumps({"path": shown, "old_string": change[0], "new_string": change[1]})
    return f"{refused} To make the change your content makes, call edit with:\n{call}"


def suggested_edit(old: str, new: str) -> tuple[str, str] | None:
    """(old_string, new_string) turning `old` into `new` when they differ in one stretch
    of at most _MAX_SUGGESTED_LINES lines and old_string occurs once in `old` (widened by
    a line of context each way until it does); ("", "") when they are the same; None
    otherwise, or when `new` leaves code out with a placeholder."""
    import difflib

    if old == new:
        return ("", "")
    if added_elisions(old, new):
        return None
    before, after = old.splitlines(keepends=True), new.splitlines(keepends=True)
    opcodes = difflib.SequenceMatcher(None, before, after, autojunk=False).get_opcodes()
    changed = [op for op in opcodes if op[0] != "equal"]
    first, last = changed[0], changed[-1]
    start, end, new_start, new_end = first[1], last[2], first[3], last[4]
    if max(end - start, new_end - new_start) > _MAX_SUGGESTED_LINES:
        return None
    if len(before) > 3 and (end - start) * 2 > len(before):
        return None  # most of the file: a rewrite, perhaps from memory, not a change
    for _ in range(4):
        old_string = "".join(before[start:end])
        if old_string and old.count(old_string) == 1:
            return old_string, "".join(after[new_start:new_end])
        if start == 0 and end == len(before):
            break
        if start > 0:
            start, new_start = start - 1, new_start - 1
        if end < len(before):
            end, new_end = end + 1, new_end + 1
    return None


def _refuse_replacement_chars(new_text: str, old_text: str, shown: str) -> None:
    """A U+FFFD left in the new text of a file with stray bytes, on a line that is not
    one of the file's own (some hold a real U+FFFD), stands for a stray byte on a line
    the model changed: written, the byte would become U+FFFD's three bytes."""
    own = {line for line in old_text.split("\n") if "\ufffd" in line}
    changed = (
        n for n, line in enumerate(new_text.split("\n"), 1) if "\ufffd" in line and line not in own
    )
    if (number := next(changed, None)) is None:
        return
    raise ToolError(
        f"not written: line {number} of the new content holds U+FFFD where {shown} has a "
        "byte that is not UTF-8, and writing would turn that byte into U+FFFD's three bytes. "
        "Use edit for the lines around it (edit keeps such bytes), or write that line back "
        "exactly as read showed it."
    )
