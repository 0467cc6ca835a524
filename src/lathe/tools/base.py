"""The tool seam: a tool is one object holding its spec and its handler.

Contract for `Tool.execute(args, ctx)`:
- `args` is an instance of `Tool.parameters`, already validated by the loop.
- It returns a `ToolOutput`. A failure the model should see and can act on (file not
  found, 0 matches, a path outside the workspace) is `ToolOutput(is_error=True)` or a
  raised `ToolError`; the loop turns both into an error result. Any other exception is
  a bug: the loop reports it to the model as an internal error of that tool.
- File tools resolve every path through `lathe.tools.paths.resolve_path` and never touch
  anything outside the workspace. Commands run only through `ctx.executor`.
- `read_only` tools change nothing on disk, so the loop may run several concurrently.
- A tool that changes files and is not `repeatable` (edit, write) does the same thing
  each time it gets the same arguments, so the loop counts repeats of such a call over
  the whole run as a stall. Commands are `repeatable`: their result can change.
- A tool may also define `refusal_hint(args, ctx) -> str`: when a hook (a deny rule,
  the user) refuses its call, a non-empty answer is added to the refusal the model
  reads. `edit` uses it to name the file that really holds old_string.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar, Protocol

from pydantic import BaseModel, ConfigDict

from lathe.exec.base import Executor
from lathe.types import ToolSpec


class Params(BaseModel):
    """Base for tool parameter models: unknown arguments are an error the model sees."""

    model_config = ConfigDict(extra="forbid")


@dataclass
class ToolOutput:
    content: str
    is_error: bool = False
    summary: str = ""  # one line for progress displays: "120 lines", "exit 0"
    details: dict[str, Any] = field(default_factory=dict)  # diff, exit_code, path ...


@dataclass
class Limits:
    read_default_lines: int = 2000
    read_max_line_chars: int = 2000
    output_max_bytes: int = 30_000  # tool output kept in context; the rest is spilled
    bash_default_timeout_s: float = 120.0
    bash_max_timeout_s: float = 600.0
    # False: write only creates files and every change goes through edit. Set for small
    # context windows, whose models otherwise rewrite whole files from memory.
    write_may_replace: bool = True


@dataclass
class ToolContext:
    """What a tool may use. Built once per run by the face that starts the agent."""

    workspace: Path
    executor: Executor
    spill_dir: Path
    file_state: Any  # lathe.tools.files.FileState; typed loosely to keep this module light
    limits: Limits = field(default_factory=Limits)
    # Path patterns a read rule denies. The gate checks a tool's path argument; searches
    # over a folder (grep, glob, edit's "it is in another file") leave these files out.
    deny_read: tuple[str, ...] = ()


class Tool(Protocol):
    name: ClassVar[str]
    description: ClassVar[str]
    parameters: ClassVar[type[Params]]
    read_only: ClassVar[bool]
    repeatable: ClassVar[bool] = False
    """The same call may usefully run again after other changes (a command)."""

    async def execute(self, args: Any, ctx: ToolContext) -> ToolOutput: ...

    def summarize_call(self, args: Any) -> str:
        """The key argument of a call, for one-line progress displays."""
        ...


def tool_spec(tool: Tool) -> ToolSpec:
    schema = tool.parameters.model_json_schema()
    schema.pop("title", None)
    for prop in schema.get("properties", {}).values():
        prop.pop("title", None)
    return ToolSpec(name=tool.name, description=tool.description, parameters=schema)


class ToolRegistry:
    """Tools by name. Concrete tools register here; the loop never names one."""

    def __init__(self, tools: list[Tool] | None = None) -> None:
        self._tools: dict[str, Tool] = {}
        self._specs: list[ToolSpec] | None = None
        for tool in tools or []:
            self.register(tool)

    def register(self, tool: Tool) -> None:
        if tool.name in self._tools:
            raise ValueError(f"tool {tool.name!r} is already registered")
        self._tools[tool.name] = tool
        self._specs = None

    def get(self, name: str) -> Tool | None:
        return self._tools.get(name)

    def names(self) -> list[str]:
        return list(self._tools)

    def specs(self) -> list[ToolSpec]:
        """Built once (every request sends them; a JSON schema is not free to make)."""
        if self._specs is None:
            self._specs = [tool_spec(t) for t in self._tools.values()]
        return self._specs
