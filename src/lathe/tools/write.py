"""The `write` tool: create a file, or replace one the agent has read.

Replacing a file requires that the agent read (or wrote) it in this session and that it
has not changed since: a whole-file write from memory is how work gets lost. An
overwrite keeps the old file's encoding, BOM and line endings.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any, ClassVar

from pydantic import Field

from lathe.atomic_write import write_atomic
from lathe.errors import ToolError
from lathe.plural import plural
from lathe.tools.base import Params, Tool, ToolContext, ToolOutput
from lathe.tools.files import (
    clip_diff,
    count_lines,
    current_text,
    decode_text,
    os_errors,
    state_of,
    unified_diff,
)
from lathe.tools.paths import display_path, refuse_special, resolve_path

# A line standing for code the model left out: "# ...", "// ... existing code ...",
# "# rest of the code unchanged". Written into a whole-file replacement, it deletes that
# code — the commonest way small models destroy a file.
_ELISION = re.compile(
    r"^\s*(#|//|/\*|--|<!--)\s*(\.\.\.|…|\[?\.\.\.|(the )?rest of|existing code|"
    r"(code )?(remains|unchanged)|same as before)",
    re.IGNORECASE | re.MULTILINE,
)


def elided_lines(text: str) -> list[str]:
    return [m.group(0).strip() for m in _ELISION.finditer(text)]


class WriteParams(Params):
    path: str = Field(description="File to write, relative to the workspace root.")
    content: str = Field(description="The complete new content of the file.")


class WriteTool(Tool):
    name: ClassVar[str] = "write"
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
            raise ToolError(
                f"{shown} already exists; write only creates new files here. Change it with "
                "edit (an exact old_string and its replacement), after reading the part."
            )
        if not state_of(ctx).was_seen(path):
            raise ToolError(
                f"{shown} already exists and you have not read it in this session. Read it "
                f"first, then use edit to change part of it (or write to replace it whole)"
            )
        before = path.read_bytes()
        state_of(ctx).check_not_stale(path, shown, before)
        old = decode_text(before)
        new_elisions = set(elided_lines(args.content)) - set(elided_lines(old.text if old else ""))
        if new_elisions:
            raise ToolError(
                f"not written: the new content of {shown} has a placeholder for left-out "
                f"code ({sorted(new_elisions)[0]!r}), and write replaces the whole file, so "
                "that code would be lost. Use edit to change just the part you mean, or "
                "write the complete file."
            )
        new_text = args.content.replace("\r\n", "\n")
        if old is None:
            data, old_text = args.content.encode("utf-8"), ""
        else:
            data, old_text = old.encode(new_text, shown), old.text
        write_atomic(path, data)
        state_of(ctx).record(path, data)
        diff = unified_diff(shown, old_text, new_text)
        was = "" if old is None else f", was {count_lines(old_text)}"
        return ToolOutput(
            content=f"Overwrote {shown} ({lines}{was}).\n\n{clip_diff(diff)}",
            summary=f"overwritten, {lines}",
            details={"path": shown, "created": False, "diff": diff},
        )
