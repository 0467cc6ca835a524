"""The `glob` tool: files whose path matches a glob, newest first (ripgrep's file walk)."""

from __future__ import annotations

import os
from typing import ClassVar

from pydantic import Field
from pydantic.json_schema import SkipJsonSchema

from lathe.errors import ToolError
from lathe.plural import plural
from lathe.tools import vendored
from lathe.tools.base import Params, Tool, ToolContext, ToolOutput
from lathe.tools.grep import (
    RG_COMMON,
    readable_paths,
    run_rg_project_first,
    search_target,
    strip_dot,
)
from lathe.tools.paths import place

_MAX_FILES = 200
_LIST_BYTES = 8 * 1024 * 1024  # enough to sort a large repository's files by time


class GlobParams(Params):
    pattern: str = Field(
        description="Glob to match, e.g. '*.py' (any depth), 'src/**/*.ts', 'test_*.py'."
    )
    path: str | SkipJsonSchema[None] = Field(
        default=None, description="Directory to search in (default: the workspace root)."
    )


class GlobTool(Tool):
    name: ClassVar[str] = "glob"
    description: ClassVar[str] = (
        "Find files by name pattern. Returns matching paths, most recently modified first "
        "(skips files ignored by .gitignore)."
    )
    parameters: ClassVar[type[Params]] = GlobParams
    read_only: ClassVar[bool] = True
    path_argument: ClassVar[str | None] = "path"

    def summarize_call(self, args: GlobParams) -> str:
        return f"{args.pattern} in {args.path}" if args.path else args.pattern

    async def execute(self, args: GlobParams, ctx: ToolContext) -> ToolOutput:
        pattern = strip_dot(args.pattern.strip())
        if not pattern:
            raise ToolError("pattern is empty; give a glob such as '*.py' or 'src/**/*.ts'")
        resolved, shown, target = search_target(ctx, args.path)
        if not resolved.is_dir():
            raise ToolError(f"{shown} is a file, not a directory; glob searches directories")
        split = await run_rg_project_first(
            [*RG_COMMON, "--files", f"--glob={pattern}"],
            target,
            cwd=ctx.workspace,
            max_bytes=_LIST_BYTES,
            path_of=lambda line: line,
            split=not vendored.named_in(pattern),
        )
        result = split.result
        own = readable_paths(split.own, ctx.deny_read)
        others = readable_paths(split.others, ctx.deny_read)
        if result.code == 2 and not own and not others:
            raise ToolError(f"rg failed: {result.stderr.strip() or 'no message'}")
        if not own and not others:
            return ToolOutput(
                content=f"No files match {pattern!r} in {place(shown)}.", summary="no files"
            )
        for files in (own, others):
            files.sort(key=lambda name: (-_mtime(ctx.workspace / name), name))
        files = own + others
        listed = files[:_MAX_FILES]
        body = "\n".join(listed)
        cut = result.cut or split.others_cut
        if len(files) > _MAX_FILES or cut:
            total = f"more than {len(files):,}" if cut else f"{len(files):,}"
            narrow = "Narrow the pattern or give a path."
            if others:
                where = vendored.folders(others, vendored.prefix(target))
                count = f"more than {len(others):,}" if split.others_cut else f"{len(others):,}"
                folders = vendored.named(where)
                seen = len(listed) - min(len(own), _MAX_FILES)
                if seen:
                    what = (
                        f"{len(listed)} of {total} files: the project's own first "
                        f"({len(own):,}), then the {seen:,} newest of {count} {folders}"
                    )
                else:
                    mine = f"more than {len(own):,}" if result.cut else f"{len(own):,}"
                    what = (
                        f"the {len(listed)} newest of the project's own {mine} files; "
                        f"{count} more {folders} are not shown"
                    )
                body += (
                    f"\n\n[Showing {what}. To list only those, give one as path, e.g. "
                    f"{vendored.path_example(where)}. {narrow}]"
                )
            else:
                body += f"\n\n[Showing the {len(listed)} newest of {total} files. {narrow}]"
        return ToolOutput(content=body, summary=plural(len(files), "file"))


def _mtime(path: os.PathLike[str]) -> int:
    try:
        return os.stat(path).st_mtime_ns
    except OSError:
        return 0
