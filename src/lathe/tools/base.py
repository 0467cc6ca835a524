"""The tool seam: a tool is one object holding its spec and its handler.

A tool subclasses `Tool` (or is one async function under `@tool`) and says what it is:
- `name`, `description` and `parameters` (a `Params` model; its field descriptions are
  the schema the model sees) are required. `brief` (default: the description's first
  sentence) is the one line a profile with brief tool descriptions shows instead.
- `read_only` (default False): the tool changes nothing on disk, so the loop may run
  several such calls concurrently and the policy gate lets it run in `read-only` and
  `ask` modes without asking.
- `repeatable` (default False): the same call may usefully run again after other
  changes (a command: its result can change). A tool that changes files and is not
  repeatable (edit, write) does the same thing each time it gets the same arguments,
  so the loop counts repeats of such a call over the whole run as a stall.
- `path_argument` (default None): the argument naming the workspace path the call reads
  or changes; the gate matches path rules (`edit(src/**)`, `read(.env)`) against it
  (an absent value means the workspace root).
- `refusal_hint(args, ctx) -> str | None` (default None): when a hook (a deny rule, the
  user) refuses the call, a non-empty answer is added to the refusal the model reads.
  `edit` uses it to name the file that really holds old_string. It must not raise; the
  loop drops the hint if it does.
- `shell_command(arguments) -> str | None` (default None): the shell command a call
  runs, for those that run one (`bash`), so the gate analyses it and the verify
  evidence sees which checks ran — nothing outside the tool checks its name.
- `preview_change(arguments, workspace) -> str | None` (default None): the diff a call
  would make, shown to the person asked to approve it (`edit`, `write`).
- `summarize_call(args) -> str`: the key argument, for one-line progress displays
  (default: the first parameter's value).
- `read_only_call(arguments) -> bool` (default: `read_only`): whether the gate judges
  this one call as changing nothing; `memory` says no for a user-memory write.
- `also_governed_by(arguments) -> tuple[str, ...]` (default ()): other tool names whose
  rules apply to this call too, the strictest winning: `mcp_resource(server="github")`
  answers `mcp__github__mcp_resource`, so `--deny 'mcp__github__*'` covers it.
- `concurrent` (default False): a tool that changes files but whose calls may run at
  the same time as each other (`task`: each child works in its own folder, its
  changes land one at a time); consecutive calls of such tools form one group.
- `own_spec() -> ToolSpec | None` (default None): the spec the model sees, for a tool
  whose schema is not built from a pydantic model (an MCP server's tool brings its own
  JSON schema); None: `tool_spec` builds it from `parameters`.

Contract for `Tool.execute(args, ctx)`:
- `args` is an instance of `Tool.parameters`, already validated by the loop.
- It returns a `ToolOutput`. A failure the model should see and can act on (file not
  found, 0 matches, a path outside the workspace) is `ToolOutput(is_error=True)` or a
  raised `ToolError`; the loop turns both into an error result. Any other exception is
  a bug: the loop reports it to the model as an internal error of that tool.
- `CURRENT_CALL` holds the id of the model's call being executed, for a tool that
  names it onwards (a child agent records its parent's call) and for the hooks judging
  it (the service's approver records which call waits).
- File tools resolve every path through `lathe.tools.paths.resolve_path` and never touch
  anything outside the workspace. Commands run only through `ctx.executor`.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Awaitable, Callable
from contextvars import ContextVar
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar

from pydantic import BaseModel, ConfigDict

from lathe.exec.base import Executor
from lathe.types import ToolSpec, Usage

CURRENT_CALL: ContextVar[str] = ContextVar("lathe_current_call", default="")
"""The id of the model's call being run; the loop sets it before the call's hooks."""


class Params(BaseModel):
    """Base for tool parameter models: unknown arguments are an error the model sees."""

    model_config = ConfigDict(extra="forbid")


@dataclass
class ToolOutput:
    content: str
    is_error: bool = False
    summary: str = ""  # one line for progress displays: "120 lines", "exit 0"
    details: dict[str, Any] = field(default_factory=dict)  # diff, exit_code, path ...
    # Model use the call paid for (a subagent's replies): the run counts it in its usage,
    # cost and budgets as its own. `spent_usd` None: not priced.
    spent: Usage | None = None
    spent_usd: float | None = None


@dataclass
class Limits:
    read_default_lines: int = 2000
    read_max_line_chars: int = 2000
    output_max_bytes: int = 30_000  # tool output kept in context; the rest is spilled
    # What the outputs of one reply's calls may hold together (None: no bound): with more
    # calls than fit at `output_max_bytes` each, each gets its share. The latest reply's
    # results are never pruned, and six whole reads ended a 32K-window run.
    reply_outputs_max_bytes: int | None = None
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
    # Path patterns an edit rule denies: a hint never sends the model to such a file.
    deny_edit: tuple[str, ...] = ()


class Tool(ABC):
    """Base of every tool; see the module docstring for what each member means."""

    name: ClassVar[str]
    description: ClassVar[str]
    parameters: ClassVar[type[Params]]
    brief: ClassVar[str] = ""
    read_only: ClassVar[bool] = False
    concurrent: ClassVar[bool] = False
    repeatable: ClassVar[bool] = False
    path_argument: ClassVar[str | None] = None

    @abstractmethod
    async def execute(self, args: Any, ctx: ToolContext) -> ToolOutput: ...

    def summarize_call(self, args: Any) -> str:
        """The key argument of a call, for one-line progress displays."""
        values = list(args.model_dump().values()) if isinstance(args, BaseModel) else []
        first = str(values[0]) if values and values[0] is not None else ""
        first = first.strip().splitlines()[0] if first.strip() else ""
        return first if len(first) <= 80 else first[:77] + "..."

    def refusal_hint(self, args: Any, ctx: ToolContext) -> str | None:
        """Text to add when a hook refuses this call; None (or "") adds nothing."""
        return None

    def shell_command(self, arguments: dict[str, Any]) -> str | None:
        """The shell command this call runs (from its raw arguments); None: it runs none."""
        return None

    def preview_change(self, arguments: dict[str, Any], workspace: Path) -> str | None:
        """The unified diff this call would make, for a person asked to approve it; None
        when the tool changes no file or the change cannot be predicted."""
        return None

    def read_only_call(self, arguments: dict[str, Any]) -> bool:
        """Whether this call (from its raw arguments) is judged as one that changes
        nothing, for the approval mode's default; `read_only` unless a tool knows more."""
        return self.read_only

    def also_governed_by(self, arguments: dict[str, Any]) -> tuple[str, ...]:
        """Tool names whose permission rules also apply to this call (from its raw
        arguments); () for none."""
        return ()

    def own_spec(self) -> ToolSpec | None:
        """The spec the model sees when it is not built from `parameters`; None: built."""
        return None


def tool(
    function: Callable[..., Awaitable[Any]] | None = None,
    *,
    read_only: bool = False,
    repeatable: bool = False,
    path_argument: str | None = None,
    summarize: Callable[[Any], str] | None = None,
) -> Any:
    """Make one async function a `Tool` (the decorated name is the tool instance):

        @tool(read_only=True, path_argument="path")
        async def ls(args: LsParams, ctx: ToolContext) -> ToolOutput:
            \"\"\"List the files in a directory.\"\"\"

    The tool's name is the function's, its description the docstring (required: it is
    what the model reads). Its parameters are the `Params` model the first parameter is
    annotated with (the function receives the validated instance), or else the
    signature: every parameter but the one annotated `ToolContext` becomes a field (a
    default makes it optional; `Annotated[str, Field(description=...)]` describes it),
    and the function is called with them by name. A parameter annotated `ToolContext`
    receives the context. The function returns a `ToolOutput`, or text for a plain
    successful result. `summarize` replaces the default `summarize_call`. Raises
    TypeError for a function that is not async or has no docstring.
    """

    def make(fn: Callable[..., Awaitable[Any]]) -> Tool:
        return _function_tool(
            fn, read_only=read_only, repeatable=repeatable, path_argument=path_argument,
            summarize=summarize,
        )  # fmt: skip

    return make if function is None else make(function)


def _function_tool(
    fn: Callable[..., Awaitable[Any]],
    *,
    read_only: bool,
    repeatable: bool,
    path_argument: str | None,
    summarize: Callable[[Any], str] | None,
) -> Tool:
    import inspect
    from typing import get_type_hints

    from pydantic import create_model

    if not inspect.iscoroutinefunction(fn):
        raise TypeError(f"@tool needs an async function; {fn.__qualname__} is not one")
    doc = inspect.getdoc(fn) or ""
    if not doc:
        raise TypeError(f"@tool: {fn.__qualname__} needs a docstring, the model's description")
    hints = get_type_hints(fn, include_extras=True)
    signature = inspect.signature(fn).parameters.values()
    contexts = [p.name for p in signature if hints.get(p.name) is ToolContext]
    fields = [p for p in signature if p.name not in contexts]
    first = hints.get(fields[0].name) if fields else None
    takes_model = isinstance(first, type) and issubclass(first, Params)
    if takes_model and len(fields) == 1:
        model: type[Params] = first  # type: ignore[assignment]
    else:
        takes_model = False
        model = create_model(  # type: ignore[call-overload]
            f"{fn.__name__}_params",
            __base__=Params,
            **{
                p.name: (hints.get(p.name, Any), ... if p.default is p.empty else p.default)
                for p in fields
            },
        )

    class FunctionTool(Tool):
        name = fn.__name__
        description = doc
        parameters = model

        async def execute(self, args: Any, ctx: ToolContext) -> ToolOutput:
            context = dict.fromkeys(contexts, ctx)
            called = fn(args, **context) if takes_model else fn(**dict(args), **context)
            result = await called
            return result if isinstance(result, ToolOutput) else ToolOutput(content=str(result))

        def summarize_call(self, args: Any) -> str:
            return summarize(args) if summarize else super().summarize_call(args)

    FunctionTool.read_only = read_only
    FunctionTool.repeatable = repeatable
    FunctionTool.path_argument = path_argument
    FunctionTool.__name__ = FunctionTool.__qualname__ = f"{fn.__name__}_tool"
    FunctionTool.__doc__ = doc
    return FunctionTool()


def tool_spec(tool: Tool, *, brief: bool = False) -> ToolSpec:
    """The spec the model sees. `brief`: the tool's `brief` line (else the first
    sentence of its description) and parameters without descriptions or defaults, a
    fraction of the tokens, for models that read their prompt slowly."""
    own = tool.own_spec()
    if own is not None:
        return own
    schema = tool.parameters.model_json_schema()
    schema.pop("title", None)
    for prop in schema.get("properties", {}).values():
        prop.pop("title", None)
        if brief:
            prop.pop("description", None)
            prop.pop("default", None)
    description = tool.description
    if brief:
        description = tool.brief or description.split(". ")[0].rstrip(".") + "."
    return ToolSpec(name=tool.name, description=description, parameters=schema)


class ToolRegistry:
    """Tools by name. Concrete tools register here; the loop never names one.

    Every registered tool is callable (`get`, `names`); only the advertised ones send
    their spec with each request (`specs`). A deferred tool (`advertised=False`: MCP
    tools whose schemas would flood the window) is found through a search tool, and a
    call to it by name works like any other."""

    def __init__(self, tools: list[Tool] | None = None, *, brief: bool = False) -> None:
        """`brief`: advertise each tool in its brief form (`tool_spec`)."""
        self._tools: dict[str, Tool] = {}
        self._deferred: set[str] = set()
        self._specs: list[ToolSpec] | None = None
        self._brief = brief
        for tool in tools or []:
            self.register(tool)

    def register(self, tool: Tool, *, advertised: bool = True) -> None:
        if tool.name in self._tools:
            raise ValueError(f"tool {tool.name!r} is already registered")
        self._tools[tool.name] = tool
        if not advertised:
            self._deferred.add(tool.name)
        self._specs = None

    def get(self, name: str) -> Tool | None:
        return self._tools.get(name)

    def names(self) -> list[str]:
        return list(self._tools)

    def specs(self) -> list[ToolSpec]:
        """Built once (every request sends them; a JSON schema is not free to make)."""
        if self._specs is None:
            self._specs = [
                tool_spec(t, brief=self._brief)
                for name, t in self._tools.items()
                if name not in self._deferred
            ]
        return self._specs
