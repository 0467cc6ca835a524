"""MCP servers' tools as lathe tools, the `mcp_resource` tool, and `tool_search`.

A server's tool is `mcp__SERVER__TOOL` (characters a model API refuses become `_`; a
name past 64 characters is cut and given a short hash, as is one a sibling or another
server's tool already has, `clashes` saying so) whose spec is the server's own
JSON schema. Its arguments are checked against that schema with `jsonschema` before any
hook runs; a mismatch is an error result holding the schema, so a model that called a
deferred tool blind learns its parameters from the answer. It is read-only only when the
server's annotations say `readOnlyHint`. Its result goes through the same cap as a
command's output (head and tail kept, the whole in the spill folder); images, audio and
binary resources are written to the spill folder and named in the result.
"""

from __future__ import annotations

import base64
import hashlib
import json
import re
import secrets
import time
from collections.abc import Mapping
from fnmatch import fnmatchcase
from pathlib import Path
from typing import Any, ClassVar

from pydantic import ConfigDict, Field, model_validator

from lathe.mcptools.connection import McpConnection
from lathe.tools.base import Params, Tool, ToolContext, ToolOutput, tool_spec
from lathe.tools.capping import capped
from lathe.types import ToolSpec

_UNSAFE = re.compile(r"[^A-Za-z0-9_-]")
_MAX_NAME = 64
_EXTENSIONS = {
    "image/png": ".png", "image/jpeg": ".jpg", "image/gif": ".gif", "image/webp": ".webp",
    "image/svg+xml": ".svg", "audio/wav": ".wav", "audio/mpeg": ".mp3",
    "application/pdf": ".pdf", "application/json": ".json", "text/plain": ".txt",
}  # fmt: skip


def tool_name(server: str, tool: str, taken: frozenset[str] | set[str] = frozenset()) -> str:
    """`mcp__SERVER__TOOL` as a model API takes it; given a short hash of the tool's own
    name when cut to length, or when one of `taken` (a sibling's that cleaned up the
    same: `a.b` beside `a_b`) already has it."""
    name = f"mcp__{server}__{_UNSAFE.sub('_', tool)}"
    if len(name) <= _MAX_NAME and name not in taken:
        return name
    digest = hashlib.sha256(tool.encode()).hexdigest()[:8]
    return f"{name[: _MAX_NAME - 9]}_{digest}"


def offered(config: Any, remote: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The tools of a server's `remote` list its `include_tools` and `exclude_tools`
    globs keep: those a run offers, and names (an excluded tool named had pushed another
    server's tool off its plain name in `lathe mcp list`)."""
    include, exclude = config.include_tools, config.exclude_tools
    return [
        tool
        for tool in remote
        if (not include or any(fnmatchcase(tool["name"], p) for p in include))
        and not any(fnmatchcase(tool["name"], p) for p in exclude)
    ]


def mcp_tools(
    connection: McpConnection,
    remote: list[dict[str, Any]],
    others: Mapping[str, McpTool] | None = None,
) -> list[McpTool]:
    """The server's tools as lathe tools, each with a name of its own (`tool_name`):
    apart from its siblings' and from `others`, the tools other servers already have
    by name (`a` + `_x` and `a_` + `x` are both `mcp__a___x`: the second had vanished)."""
    tools: list[McpTool] = []
    taken = {name for name, tool in (others or {}).items() if tool.connection is not connection}
    for listed in remote:
        tools.append(McpTool(connection, listed, taken))
        taken.add(tools[-1].name)
    return tools


def clashes(tools: list[McpTool], others: Mapping[str, McpTool]) -> list[str]:
    """One line for each of `tools` whose plain name a tool of another server in
    `others` has, saying which name each now has."""
    lines = []
    for tool in tools:
        plain = tool_name(tool.connection.name, tool.remote_name)
        first = others.get(plain)
        if first is not None and first.connection is not tool.connection and tool.name != plain:
            lines.append(
                f"MCP servers {first.connection.name} and {tool.connection.name} both have a "
                f"tool named {plain}; {first.connection.name}'s keeps it, "
                f"{tool.connection.name}'s {tool.remote_name!r} is {tool.name}"
            )
    return lines


class McpTool(Tool):
    """One tool of one MCP server."""

    repeatable: ClassVar[bool] = True  # a remote call's result may change between calls

    def __init__(
        self, connection: McpConnection, remote: dict[str, Any], taken: set[str] | None = None
    ) -> None:
        """`taken`: the names the server's other tools have so far (see `tool_name`)."""
        self.connection = connection
        self.remote_name: str = remote["name"]
        self.name = tool_name(connection.name, self.remote_name, taken or set())  # type: ignore[misc]
        self.relisted(remote)

    def relisted(self, remote: dict[str, Any]) -> None:
        """Take what the server says of this tool (at first, and when a run that started
        from the cache lists the tools again once the server starts): whether it is
        read-only, which the gate judges by, its description and its schema, which its
        arguments are checked against. A stale `readOnlyHint` had let a tool the server
        no longer marks read-only run under `--approval read-only` for the whole run.
        What the model was already sent stays as it is until the specs are rebuilt; a
        call that no longer fits gets the new schema in its error."""
        self.description = (  # type: ignore[misc]
            remote.get("description")
            or f"The {self.remote_name} tool of the MCP server {self.connection.name}."
        )
        schema = remote.get("input_schema") or {"type": "object"}
        self.schema: dict[str, Any] = schema if isinstance(schema, dict) else {"type": "object"}
        self.read_only = bool(remote.get("read_only"))  # type: ignore[misc]
        self._parameters: type[Params] | None = None

    @property  # type: ignore[override]
    def parameters(self) -> type[Params]:
        """Built at the first call: most of a large server's tools are never called."""
        if self._parameters is None:
            self._parameters = _arguments_model(self.schema)
        return self._parameters

    def own_spec(self) -> ToolSpec:
        return ToolSpec(name=self.name, description=self.description, parameters=self.schema)

    def one_line(self) -> str:
        """Name and the first sentence of the description, for a deferred listing."""
        first = self.description.strip().splitlines()[0] if self.description.strip() else ""
        first = first.split(". ")[0].rstrip(".")
        return f"{self.name}: {first[:117] + '...' if len(first) > 120 else first}"

    def summarize_call(self, args: Any) -> str:
        values = [v for v in args.model_dump().values() if v not in (None, "", [], {})]
        text = json.dumps(values[0], ensure_ascii=False) if values else ""
        text = text.strip('"')
        return text if len(text) <= 80 else text[:77] + "..."

    async def execute(self, args: Params, ctx: ToolContext) -> ToolOutput:
        arguments = args.model_dump(exclude_unset=True)
        result = await self.connection.call_tool(self.remote_name, arguments)
        parts = [_content_text(block, ctx) for block in result.content or []]
        if result.structured_content is not None and not any(p.strip() for p in parts):
            parts.append(json.dumps(result.structured_content, ensure_ascii=False, indent=1))
        text = "\n".join(part for part in parts if part) or "(the tool returned nothing)"
        if result.is_error:
            text = f"Error from MCP server {self.connection.name}: {text}"
        return capped(text, ctx, is_error=bool(result.is_error))


class ResourceParams(Params):
    server: str = Field(description="The MCP server's name, as in mcp__NAME__TOOL.")
    uri: str = Field(description="The resource's URI, e.g. file:///notes.txt.")


class McpResourceTool(Tool):
    name: ClassVar[str] = "mcp_resource"
    parameters: ClassVar[type[Params]] = ResourceParams
    read_only: ClassVar[bool] = True
    repeatable: ClassVar[bool] = True

    def __init__(self, connections: dict[str, McpConnection]) -> None:
        self.connections = connections
        self.description = (  # type: ignore[misc]
            "Read a resource (a document, a record) an MCP server offers, by its URI. "
            f"Servers: {', '.join(connections)}."
        )

    def summarize_call(self, args: ResourceParams) -> str:
        return f"{args.server} {args.uri}"

    def also_governed_by(self, arguments: dict[str, Any]) -> tuple[str, ...]:
        """A rule over the server's tools (`mcp__github__*`) covers its resources."""
        server = arguments.get("server")
        return (f"mcp__{server}__{self.name}",) if isinstance(server, str) else ()

    async def execute(self, args: ResourceParams, ctx: ToolContext) -> ToolOutput:
        from lathe.errors import ToolError

        connection = self.connections.get(args.server)
        if connection is None:
            raise ToolError(
                f"there is no MCP server named {args.server!r}; servers: "
                f"{', '.join(self.connections)}"
            )
        result = await connection.read_resource(args.uri)
        parts = [_resource_text(item, ctx) for item in result.contents]
        text = "\n".join(parts) or "(the resource is empty)"
        return capped(text, ctx)


class SearchParams(Params):
    query: str = Field(description="Words for what the tool should do, or part of its name.")


class ToolSearchTool(Tool):
    """Full schemas of deferred tools, found by words of their names and descriptions."""

    name: ClassVar[str] = "tool_search"
    parameters: ClassVar[type[Params]] = SearchParams
    read_only: ClassVar[bool] = True
    repeatable: ClassVar[bool] = True
    most: ClassVar[int] = 8

    def __init__(self, deferred: list[McpTool], *, budget_tokens: int | None = None) -> None:
        """`budget_tokens`: what this description may cost (at 3 bytes a token, as
        `schema_tokens` counts); None: no bound."""
        self.deferred = deferred
        self.description = _listed(  # type: ignore[misc]
            "Find MCP tools by what they do and get their full parameter schemas. These "
            "tools are callable by name, but their schemas are not listed to save context: "
            "search before calling one (a call with wrong arguments returns its schema). ",
            deferred,
            None if budget_tokens is None else budget_tokens * 3,
        )

    async def execute(self, args: SearchParams, ctx: ToolContext) -> ToolOutput:
        words = _words(args.query)
        scored = []
        for index, tool in enumerate(self.deferred):
            name, text = tool.name.lower(), tool.description.lower()
            in_name, in_text = set(_words(name)), set(_words(text))
            # A whole word of the name counts most, then one of the description, then a
            # part of the name ("issue" in create_issues).
            score = sum(
                4 * (word in in_name) + 2 * (word in in_text) + (word in name) for word in words
            )
            if args.query.strip().lower() in (name, tool.remote_name.lower()):
                score += 100
            if score:
                scored.append((-score, index, tool))
        found = [tool for _, _, tool in sorted(scored)[: self.most]]
        if not found:
            return ToolOutput(
                content=f"No tool matches {args.query!r}. Try other words; the tools are "
                "listed in this tool's description.",
                summary="no match",
            )
        specs = [
            {"name": s.name, "description": s.description, "parameters": s.parameters}
            for s in (tool_spec(tool) for tool in found)
        ]
        return capped(
            json.dumps(specs, ensure_ascii=False, indent=1), ctx,
            summary=f"{len(found)} tool{'s' if len(found) > 1 else ''}",
        )  # fmt: skip


def _listed(intro: str, tools: list[McpTool], budget: int | None) -> str:
    """`intro` and the tools within `budget` bytes (None: all): each with the first
    sentence of its description, else their names alone, else the first names and how
    many more there are. 3,000 tools had made a 466 KB description, past gpt-4o's
    window, which a deferral is there to spare."""
    lines = [tool.one_line() for tool in tools]
    whole = f"{intro}The tools:\n" + "\n".join(lines)
    if budget is None or len(whole.encode()) <= budget:
        return whole
    names = [tool.name for tool in tools]
    head = f"{intro}The tools (names only; search to learn what they do):\n"
    if len(head) + sum(len(name) + 1 for name in names) <= budget:
        return head + "\n".join(names)
    total = f"{len(names):,}"
    head = f"{intro}The first {total} of {total} tools (search finds every one):\n"
    room = budget - len(head.encode()) - len(f"\n… and {total} more".encode())
    shown: list[str] = []
    for name in names:
        room -= len(name) + 1
        if room < 0:
            break
        shown.append(name)
    head = f"{intro}The first {len(shown):,} of {total} tools (search finds every one):\n"
    return head + "\n".join(shown) + f"\n… and {len(names) - len(shown):,} more"


def _words(text: str) -> list[str]:
    return [word for word in re.split(r"[^a-z0-9]+", text.lower()) if word]


def _arguments_model(schema: dict[str, Any]) -> type[Params]:
    """A `Params` that takes any object and checks it against the server's schema."""
    import jsonschema

    validator_class = jsonschema.validators.validator_for(schema, jsonschema.Draft202012Validator)
    try:
        validator_class.check_schema(schema)
        validator = validator_class(schema)
    except jsonschema.SchemaError:
        validator = None  # the server's schema is broken: let the server judge
    shown = json.dumps(schema, ensure_ascii=False)

    class Arguments(Params):
        model_config = ConfigDict(extra="allow")

        @model_validator(mode="before")
        @classmethod
        def _matches_schema(cls, value: Any) -> Any:
            if validator is None:
                return value
            try:
                problems = sorted(validator.iter_errors(value), key=lambda e: list(e.path))
            except Exception:  # a $ref it cannot resolve, a pattern that is no regex
                return value  # a schema lathe cannot apply: let the server judge
            if problems:
                said = "; ".join(_problem(p) for p in problems[:5])
                raise ValueError(f"{said}. The tool's parameters (JSON schema): {shown}")
            return value

    return Arguments


def _problem(error: Any) -> str:
    where = ".".join(str(p) for p in error.absolute_path)
    return f"{where}: {error.message}" if where else error.message


def _content_text(block: Any, ctx: ToolContext) -> str:
    match getattr(block, "type", None):
        case "text":
            return block.text
        case "image" | "audio":
            return _saved(block.data, block.mime_type, block.type, ctx)
        case "resource":
            return _resource_text(block.resource, ctx)
        case "resource_link":
            return f"[resource {block.uri}{f' ({block.name})' if block.name else ''}]"
        case _:
            return json.dumps(block.model_dump(mode="json", by_alias=True), ensure_ascii=False)


def _resource_text(item: Any, ctx: ToolContext) -> str:
    text = getattr(item, "text", None)
    if text is not None:
        return text
    return _saved(item.blob, item.mime_type or "application/octet-stream", "resource", ctx)


def _saved(data: str, mime_type: str, kind: str, ctx: ToolContext) -> str:
    """Decode base64 `data` into a file in the spill folder; the line naming it."""
    try:
        raw = base64.b64decode(data, validate=False)
    except ValueError:
        return f"[{kind} {mime_type}: the server sent data that is not base64]"
    path = Path(ctx.spill_dir) / (
        f"mcp-{time.strftime('%Y%m%d-%H%M%S')}-{secrets.token_hex(4)}"
        f"{_EXTENSIONS.get(mime_type, '.bin')}"
    )
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(raw)
    except OSError as exc:
        return f"[{kind} {mime_type}, {len(raw)} bytes: could not be saved: {exc}]"
    return f"[{kind} {mime_type}, {len(raw):,} bytes, saved to {path}]"
