"""The `ls` tool: the entries of one directory, directories first, each group sorted."""

from __future__ import annotations

import os

from pydantic import Field
from pydantic.json_schema import SkipJsonSchema

from lathe.errors import ToolError
from lathe.plural import plural
from lathe.tools.base import Params, ToolContext, ToolOutput, tool
from lathe.tools.files import os_errors
from lathe.tools.paths import existing_path, place

_MAX_ENTRIES = 500


class LsParams(Params):
    path: str | SkipJsonSchema[None] = Field(
        default=None, description="Directory to list (default: the workspace root)."
    )


@tool(read_only=True, path_argument="path", summarize=lambda args: args.path or ".")
async def ls(args: LsParams, ctx: ToolContext) -> ToolOutput:
    """List the files and directories in a directory. Directories end with '/'."""
    path, shown = existing_path(ctx, args.path)
    if not path.is_dir():
        raise ToolError(f"{shown} is a file, not a directory; use read to see its content")
    with os_errors(shown, "list"), os.scandir(path) as entries:
        names = [(not _is_dir(e), e.name + ("/" if _is_dir(e) else "")) for e in entries]
    if not names:
        return ToolOutput(content=f"{place(shown)} is an empty directory.", summary="empty")
    names.sort(key=lambda item: (item[0], item[1].lower(), item[1]))
    listed = [name for _, name in names[:_MAX_ENTRIES]]
    body = "\n".join(listed)
    if len(names) > _MAX_ENTRIES:
        body += (
            f"\n\n[Showing {len(listed)} of {len(names)} entries. Use glob to find specific files.]"
        )
    return ToolOutput(content=body, summary=plural(len(names), "entry", "entries"))


def _is_dir(entry: os.DirEntry[str]) -> bool:
    try:
        return entry.is_dir()  # follows symlinks: a link to a directory lists as one
    except OSError:
        return False
