"""The `read` tool: a file's lines, numbered, a page at a time."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Annotated, ClassVar

from pydantic import Field
from pydantic.json_schema import SkipJsonSchema

from lathe.errors import ToolError
from lathe.plural import plural
from lathe.tools.base import Params, Tool, ToolContext, ToolOutput
from lathe.tools.capping import line_part
from lathe.tools.files import (
    MAX_TEXT_BYTES,
    cut_line,
    decode_text,
    looks_binary,
    os_errors,
    state_of,
)
from lathe.tools.paths import existing_path

# Optional arguments show in the schema as plain types (simplest for small models), yet an
# explicit null from the model is still accepted.
_Positive = Annotated[int, Field(ge=1)]


class ReadParams(Params):
    path: str = Field(description="File to read, relative to the workspace root.")
    offset: _Positive | SkipJsonSchema[None] = Field(
        default=None, description="Line number to start from (1 = first line)."
    )
    limit: _Positive | SkipJsonSchema[None] = Field(
        default=None, description="Maximum number of lines to return."
    )


class ReadTool(Tool):
    name: ClassVar[str] = "read"
    brief: ClassVar[str] = (
        "Read a file: numbered lines, the numbers not part of the file; offset reads on."
    )
    description: ClassVar[str] = (
        "Read a text file. Returns numbered lines as 'number<TAB>text'; the number and tab "
        "are not part of the file. Long files are returned a page at a time: the result "
        "says which offset to use to read on."
    )
    parameters: ClassVar[type[Params]] = ReadParams
    read_only: ClassVar[bool] = True
    path_argument: ClassVar[str | None] = "path"

    def summarize_call(self, args: ReadParams) -> str:
        return args.path if args.offset is None else f"{args.path}:{args.offset}"

    async def execute(self, args: ReadParams, ctx: ToolContext) -> ToolOutput:
        path, shown = existing_path(ctx, args.path)
        with os_errors(shown, "read"):
            return self._read(path, shown, args, ctx)

    def _read(self, path: Path, shown: str, args: ReadParams, ctx: ToolContext) -> ToolOutput:
        if path.is_dir():
            raise ToolError(f"{shown} is a directory, not a file; use ls to list it")
        page = _Page(ctx, shown, args.offset or 1, args.limit or ctx.limits.read_default_lines)
        if path.stat().st_size > MAX_TEXT_BYTES:
            return page.stream(path)
        data = path.read_bytes()
        if not data:
            state_of(ctx).record(path, data)
            return ToolOutput(content=f"{shown} is empty (0 bytes).", summary="empty")
        content = decode_text(data)
        if content is None:
            raise ToolError(
                f"{shown} is a binary file ({len(data):,} bytes); read shows only text files"
            )
        lines = content.text.split("\n")
        if content.text.endswith("\n"):
            lines.pop()
        if content.mixes_endings:  # edit matches a line without its CR as with it
            lines = [line.removesuffix("\r") for line in lines]
        note = ""
        if content.bad_bytes:
            verb = "is" if content.bad_bytes == 1 else "are"
            note = (
                f"[note: {shown} is UTF-8 but for {plural(content.bad_bytes, 'byte')} that "
                f"{verb} not, shown as \ufffd; edit keeps them as they are, and so does "
                "write for a line written back as shown]\n"
            )
        elif not content.is_utf8:
            note = (
                f"[note: {shown} is not UTF-8; it is shown decoded as {content.encoding}, "
                f"and edit and write keep that encoding]\n"
            )
        output = page.render(iter(lines), total=len(lines), note=note)
        state_of(ctx).record_lines(path, data, page.shown_whole, len(lines))
        return output


_FOOTER_BYTES = 160  # "[Showing lines A-B of C. More lines follow: ...]", with room


class _Page:
    """Formats one page of lines within the line, line-length and byte budgets."""

    def __init__(self, ctx: ToolContext, shown: str, first: int, limit: int) -> None:
        self._shown = shown
        self._first = first
        self._limit = limit
        self._max_chars = ctx.limits.read_max_line_chars
        self._max_bytes = ctx.limits.output_max_bytes
        self.shown_whole: list[tuple[int, int]] = []
        """The runs of lines the page showed uncut (a cut line is not seen whole)."""

    def render(self, lines: Iterator[str], *, total: int | None, note: str = "") -> ToolOutput:
        out: list[str] = []
        # The note and the footer count too: a page past the limit is cut in its middle
        # by the output cap, and a line cut out of a page must not count as seen.
        # A stray byte (a lone surrogate here) goes out as U+FFFD, 3 bytes: counted as
        # 1, a page past the cap lost its middle yet counted as seen, and `write` then
        # replaced lines the model never saw. `surrogatepass` counts each as 3.
        size = len(note.encode("utf-8", "surrogatepass")) + _FOOTER_BYTES
        number = self._first - 1
        more = False
        cut_note = ""
        for number, line in enumerate(lines, 1):
            if number < self._first:
                continue
            row = f"{number:>6}\t{self._cut(line)}"
            row_bytes = len(row.encode("utf-8", "surrogatepass")) + 1
            if len(line) > self._max_chars and not cut_note:
                row_bytes += len(self._cut_note(number).encode()) + 2
            if len(out) >= self._limit or (out and size + row_bytes > self._max_bytes):
                more = True
                break
            out.append(row)
            size += row_bytes
            if len(line) <= self._max_chars:
                self._mark_shown(number)
            elif not cut_note:
                cut_note = self._cut_note(number)
        if not out:
            count = number if total is None else total
            raise ToolError(
                f"{self._shown} has {plural(count, 'line')}; offset {self._first} is past the end"
            )
        last = self._first + len(out) - 1
        body = note + "\n".join(out) + (f"\n\n{cut_note}" if cut_note else "")
        if more:
            of_total = f" of {total}" if total is not None else ""
            body += (
                f"\n\n[Showing lines {self._first}-{last}{of_total}. More lines follow: "
                f"call read with offset={last + 1} to continue.]"
            )
        return ToolOutput(content=body, summary=plural(len(out), "line"))

    def _mark_shown(self, number: int) -> None:
        if self.shown_whole and self.shown_whole[-1][1] == number - 1:
            self.shown_whole[-1] = (self.shown_whole[-1][0], number)
        else:
            self.shown_whole.append((number, number))

    def stream(self, path: Path) -> ToolOutput:
        with path.open("rb") as handle:
            if looks_binary(handle.read(8192)):
                raise ToolError(f"{self._shown} is a binary file; read shows only text files")
            handle.seek(0)
            lines = (raw.decode("utf-8", "replace").rstrip("\r\n") for raw in handle)
            return self.render(lines, total=None)

    def _cut(self, line: str) -> str:
        return cut_line(line, self._max_chars)

    def _cut_note(self, number: int) -> str:
        # read shows no more of a line: a 7 MB one-line file showed its first 2,000
        # characters and no way to see the rest.
        command = line_part(self._shown, number, self._max_chars + 1)
        return (
            f"[Lines longer than {self._max_chars:,} characters are cut; see the rest of "
            f"one with bash, e.g. line {number}: `{command}`]"
        )
