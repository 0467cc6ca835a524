"""lathe as an MCP server: other agents and editors hand it a task and get the outcome.

Three tools over one `SessionManager`, built with the `mcp` SDK's `MCPServer`:

- `run_task` serves a new session for the task, sends a progress notification for each
  turn, tool call and verify run while it works (when the caller asked for progress),
  and returns the run's status, answer, reason, the files it changed, its evidence,
  usage and cost. Then the session stops being served (its file stays), so the
  workspace is free for the next task. Nobody can answer an approval over MCP: a call
  the approval mode would ask about is denied at once, and the model is told so.
- `list_sessions`: the stored sessions, newest first (those `lathe run` wrote too).
- `session_transcript`: one stored session as a readable transcript.

A call's arguments are checked before the tool runs (`_checked`): one the tool does not
take, or one missing or of the wrong kind, is an error result of one line naming it.

Two transports: stdio (`lathe mcp serve`, `serve_stdio`: the SDK keeps stdout for the
protocol and points anything else written there at stderr) and streamable HTTP at
`/mcp` of `lathe serve` (`HttpEndpoint`, behind the service's token).
"""

# No `from __future__ import annotations`: the SDK reads each tool's signature with
# `typing.get_type_hints`, which cannot see the `Context` imported inside
# `build_mcp_server` (the SDK is imported only where it is used).
import asyncio
import contextlib
import inspect
import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, Literal

from pydantic import BaseModel, Field

from lathe.service.live import SessionOptions

if TYPE_CHECKING:
    from mcp.server.mcpserver import MCPServer

    from lathe.service.manager import SessionManager

NOBODY_ANSWERS_S = 0.001
"""A served session's approval timeout under MCP: no person is there to answer, so an
ask is denied at once (as `lathe run` refuses what would ask) instead of waiting."""
_LISTED = 50


class Evidence(BaseModel):
    """What shows the outcome: lathe's own run of the verify command (`verify`) or, with
    none, the last test-like command the model ran after its last edit (`model_command`)."""

    source: Literal["verify", "model_command"]
    command: str
    exit_code: int | None
    passed: bool | None = Field(description="Whether it passed (None: the model's command).")
    output_tail: str = Field(default="", description="The verify command's last output.")


class RunResult(BaseModel):
    session_id: str
    status: str = Field(
        description="verified, unverified, failed, stuck, max_turns, out_of_budget, "
        "provider_error or interrupted"
    )
    answer: str = Field(description="The model's final answer.")
    reason: str = Field(description="Why the run ended, in words.")
    turns: int
    files_changed: list[str] = Field(
        description="Workspace files the run added, modified or deleted, whichever tool "
        "did it (from the checkpoints taken around each turn)."
    )
    evidence: Evidence | None
    usage: dict[str, int]
    cost_usd: float | None = Field(description="None: the model's prices are unknown.")


class StoredSession(BaseModel):
    id: str
    workspace: str
    title: str = Field(description="The first line of the first task.")
    status: str = Field(description="running, the last run's status, or unfinished.")
    turns: int
    tokens: int
    created: str
    updated: str
    parent_session: str | None = None


class SessionList(BaseModel):
    sessions: list[StoredSession]
    total: int = Field(description="How many stored sessions match, listed or not.")


class Stopping:
    """The sessions run_task stops when its call ends. A call cancelled mid-run (the
    client gave up, the server stops) leaves the stop running; whoever ends the server
    waits for them (`wait`), so each run ends as interrupted in its session file."""

    def __init__(self, manager: "SessionManager") -> None:
        self._manager = manager
        self._tasks: set[asyncio.Task[Any]] = set()
        self.calls: set[str] = set()  # the sessions of the run_task calls in progress
        self._answered: asyncio.Event | None = None  # set when the last call has ended

    def call_began(self, session_id: str) -> None:
        self.calls.add(session_id)

    def call_ended(self, session_id: str) -> None:
        self.calls.discard(session_id)
        if not self.calls and self._answered is not None:
            self._answered.set()

    async def cut_short(self, within_s: float) -> None:
        """The server is stopping: end each call's run now (recorded `interrupted`), and
        wait (at most `within_s`) until every call has answered with that status."""
        if not self.calls:
            return
        self._answered = asyncio.Event()
        for session_id in list(self.calls):
            served = self._manager.sessions.get(session_id)
            if served is not None:
                self._kept(served.abort("the server stopped"))
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self._answered.wait(), within_s)

    def stop(self, session_id: str) -> "asyncio.Task[Any]":
        return self._kept(self._manager.delete(session_id))

    def _kept(self, work: Any) -> "asyncio.Task[Any]":
        """`work` as a task `wait` waits for, however its caller ends."""
        task = asyncio.ensure_future(work)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
        return task

    async def wait(self) -> None:
        await asyncio.gather(*self._tasks, return_exceptions=True)


def build_mcp_server(manager: "SessionManager", stopping: Stopping) -> "MCPServer":
    from mcp.server.mcpserver import Context, MCPServer
    from mcp.server.mcpserver.exceptions import ToolError

    from lathe import __version__
    from lathe.errors import LatheError

    server = _checked(MCPServer)(
        "lathe",
        version=__version__,
        instructions="lathe is a coding agent: run_task gives it a task in a workspace "
        "and returns the outcome; list_sessions and session_transcript show past runs.",
        log_level="WARNING",  # the SDK configures the root logger; keep stderr quiet
    )

    async def run_task(
        workspace: Annotated[str, Field(description="Absolute path of the directory to work in.")],
        task: Annotated[str, Field(pattern=r"\S", description="What to do, in words.")],
        ctx: Context,
        verify: Annotated[
            str | None,
            Field(pattern=r"\S", description="A shell command whose success proves the work."),
        ] = None,
        model: Annotated[str | None, Field(description="A model name or id.")] = None,
        base_url: Annotated[str | None, Field(description="An OpenAI-compatible endpoint.")] = None,
        max_turns: Annotated[int | None, Field(gt=0, description="Model turns at most.")] = None,
        approval: Annotated[
            Literal["auto", "read-only", "full"],
            Field(
                description="The approval mode, as `lathe run --approval`; read-only changes "
                "nothing. What the mode would ask a person about is denied."
            ),
        ] = "auto",
    ) -> RunResult:
        """Run lathe on a task in a workspace until it finishes; returns the status
        (verified when the verify command passed), the answer, the files changed and
        the evidence. Unset options come from the workspace's lathe config."""
        options = SessionOptions(
            workspace=workspace, model=model, base_url=base_url, approval=approval,
            verify=verify, max_turns=max_turns, approval_timeout_s=NOBODY_ANSWERS_S,
        )  # fmt: skip
        try:
            served = await manager.create(options, kept=False)
        except LatheError as exc:  # a bad workspace or model, a workspace in use
            raise ToolError(str(exc)) from None
        stopping.call_began(served.id)
        try:
            served.post(task)
            finished, verified = await _follow(served, ctx)
            changed = await asyncio.to_thread(_files_changed, served, manager.home)
        finally:
            stopping.call_ended(served.id)
            # A cancelled call (the client gave up, the server stops) still ends the run
            # as interrupted and frees the workspace. Someone may have stopped it
            # already (`lathe serve`'s DELETE /v1/sessions/ID).
            if served.id in manager.sessions:
                await asyncio.shield(stopping.stop(served.id))
        return _result(served.id, finished, verified, changed)

    async def list_sessions(
        workspace: Annotated[
            str | None, Field(description="Only this workspace's sessions (default: all).")
        ] = None,
        limit: Annotated[int, Field(gt=0, le=1000, description="At most this many.")] = _LISTED,
    ) -> SessionList:
        """The stored sessions, newest first: those run_task, lathe serve and lathe run
        recorded."""
        from lathe.session import SessionStore

        try:
            where = Path(workspace).expanduser().resolve() if workspace else None
        except (ValueError, OSError, RuntimeError) as exc:  # a null byte, ~nobody/
            raise ToolError(
                f"workspace {workspace!r} is not a usable path ({exc}); give "
                "a directory's absolute path, or leave it out for every workspace's sessions"
            ) from None
        summaries = await asyncio.to_thread(SessionStore(manager.home).list, where)
        return SessionList(
            sessions=[_stored(summary) for summary in summaries[:limit]], total=len(summaries)
        )

    async def session_transcript(
        session_id: Annotated[str, Field(description="A session id, or its first characters.")],
    ) -> str:
        """One stored session as a readable transcript: tasks, replies, tool calls with
        their results abbreviated, and how each run ended."""
        from lathe.session import SessionStore
        from lathe.session.transcript import render_text
        from lathe.ui.sessions_cmd import checkpoint_numbers

        def render() -> str:
            session = SessionStore(manager.home).open(session_id, readonly=True)
            return render_text(session, checkpoints=checkpoint_numbers(session))

        try:
            return await asyncio.to_thread(render)
        except LatheError as exc:  # no such session, an ambiguous prefix
            raise ToolError(str(exc)) from None

    # The docstrings, dedented, are the descriptions the calling model reads.
    server.add_tool(run_task, description=inspect.getdoc(run_task))
    server.add_tool(list_sessions, description=inspect.getdoc(list_sessions))
    server.add_tool(
        session_transcript, description=inspect.getdoc(session_transcript), structured_output=False
    )
    return server


def _checked(server_class: Any) -> Any:
    """`server_class` (the SDK's MCPServer) refusing a call's arguments in one line that
    names them: one the tool does not take (the SDK ignored it), or one missing or of the
    wrong kind (the SDK answered pydantic's report, several lines long)."""
    from mcp.server.mcpserver.exceptions import ToolError, UnexpectedToolError
    from pydantic import ValidationError

    class Checked(server_class):  # type: ignore[misc, valid-type]
        async def call_tool(self, name: str, arguments: dict[str, Any], context: Any = None) -> Any:
            schema = next((t.input_schema for t in await self.list_tools() if t.name == name), None)
            if schema is None:  # an unknown tool: the SDK says so
                return await super().call_tool(name, arguments, context)
            takes = list(schema.get("properties", {}))
            if unknown := [key for key in arguments if key not in takes]:
                raise ToolError(
                    f"{name}: unknown argument{'s' if len(unknown) > 1 else ''} "
                    f"{', '.join(f'`{key}`' for key in unknown)}: it takes {', '.join(takes)}"
                )
            try:
                return await super().call_tool(name, arguments, context)
            except ToolError as exc:
                # The arguments' validation (the tool's own body raises ToolError
                # from None, and a crash is an UnexpectedToolError).
                cause = exc.__cause__
                if isinstance(exc, UnexpectedToolError) or not isinstance(cause, ValidationError):
                    raise
                problems = "; ".join(_problem(e, schema) for e in cause.errors())
                raise ToolError(f"{name}: {problems}") from None

    return Checked


def _problem(error: Any, schema: dict[str, Any]) -> str:
    """One of pydantic's validation errors of a tool's arguments, in words on one line."""
    field = ".".join(str(part) for part in error["loc"])
    if error["type"] == "missing":
        described = str(schema["properties"].get(field, {}).get("description", "")).rstrip(".")
        need = f": {described[:1].lower()}{described[1:]}" if described else ""
        return f"`{field}` is required{need}"
    given = repr(error.get("input"))
    given = given if len(given) <= 60 else given[:57] + "..."
    if error["type"] == "string_pattern_mismatch" and error.get("ctx", {}).get("pattern") == r"\S":
        return f"`{field}` needs a word, not only spaces ({given})"
    message = str(error["msg"])
    return f"`{field}`: {message[:1].lower()}{message[1:]}, not {given}"


async def _follow(served: Any, ctx: Any) -> tuple[dict[str, Any], dict[str, Any] | None]:
    """Read the session's events until its run finishes, telling the caller what it
    does; the run's end and the last verify run."""
    from mcp.server.mcpserver.exceptions import ToolError

    turn, seen, sent, verified = 0, 0, 0, None
    stopped = False
    while not stopped:  # a reader dropped for lagging behind reads on from `seen`
        stopped = served.stopped  # once stopped, one last read of the journal
        async for number, wire in served.events(seen):
            seen, event = number, json.loads(wire)
            match event["type"]:
                case "turn_started":
                    turn = event["turn"]
                    message = f"turn {turn}"
                case "tool_started":
                    message = f"turn {turn}: {event['name']} {event['summary']}".rstrip()
                case "verify_started":
                    before = " (before the first turn)" if event.get("baseline") else ""
                    message = f"verify{before}: {event['command']}"
                case "verify_finished":
                    verified = event if not event.get("baseline") else verified
                    continue
                case "approval_requested":
                    asked = event["tool"]
                    message = f"turn {turn}: {asked} needs approval; denied (nobody answers)"
                case "run_finished":
                    return event, verified
                case _:
                    continue
            sent += 1
            await ctx.report_progress(sent, None, message)
    raise ToolError(f"session {served.id} was stopped before its run finished")


def _files_changed(served: Any, home: Path) -> list[str]:
    """The files in the checkpoints the run recorded after each turn that changed one."""
    from lathe.checkpoint import Checkpoints
    from lathe.session import CheckpointEntry

    refs = {e.ref for e in served.session.entries if isinstance(e, CheckpointEntry)}
    if not refs:
        return []
    checkpoints = Checkpoints(Path(served.setup.workspace), home).list()
    files: dict[str, None] = {}
    for checkpoint in reversed(checkpoints):  # oldest first
        if checkpoint.commit in refs:
            files.update((change.path, None) for change in checkpoint.files)
    return list(files)


def _result(
    session_id: str, finished: dict[str, Any], verified: dict[str, Any] | None, changed: list[str]
) -> RunResult:
    evidence = None
    if verified is not None:
        evidence = Evidence(
            source="verify", command=verified["command"], exit_code=verified["exit_code"],
            passed=verified["passed"], output_tail=verified["output_tail"],
        )  # fmt: skip
    elif finished.get("evidence"):
        shown = finished["evidence"]
        evidence = Evidence(source="model_command", command=shown["command"],
                            exit_code=shown["exit_code"], passed=None)  # fmt: skip
    usage = dict(finished["usage"])
    usage["total_tokens"] = sum(usage.values())  # every kind, as --max-tokens counts
    return RunResult(
        session_id=session_id,
        status=finished["status"],
        answer=finished["answer"],
        reason=finished.get("reason", ""),
        turns=finished["turns"],
        files_changed=changed,
        evidence=evidence,
        usage=usage,
        cost_usd=finished.get("cost_usd"),
    )


def _stored(summary: Any) -> StoredSession:
    return StoredSession(
        id=summary.id,
        workspace=summary.cwd,
        title=summary.title,
        status=summary.status,
        turns=summary.turns,
        tokens=summary.tokens,
        created=summary.created.isoformat(),
        updated=summary.updated.isoformat(),
        parent_session=summary.parent_session,
    )


def serve_stdio(max_commands: int | None = None) -> None:
    """`lathe mcp serve`: the MCP server over stdin and stdout until the client closes
    them. It serves only the sessions its own run_task calls create (not `lathe serve`'s
    registry), and stops any still running when it ends."""
    from lathe.service.manager import server_manager

    # No records: its sessions live as long as the calls that serve them.
    manager = server_manager(max_commands, keep_records=False)
    stopping = Stopping(manager)
    server = build_mcp_server(manager, stopping)

    async def main() -> None:
        try:
            await server.run_stdio_async()
        finally:
            await stopping.wait()
            await manager.close()

    asyncio.run(main())


class HttpEndpoint:
    """`/mcp` of `lathe serve`: the SDK's streamable HTTP transport, behind the service's
    token (checked before routing, `app._TokenGate`, as for /v1). The SDK (0.9 s of imports) is
    loaded at the first request that gets in, not when the server starts; its
    transport's task group then lives in a task of its own until `run()`, which the
    server's lifespan holds open, ends — and leaving it waits for the runs that shutdown
    cut short to be stopped."""

    def __init__(self, manager: "SessionManager") -> None:
        self._manager = manager
        self._stopping = Stopping(manager)
        self._sessions: Any = None  # the SDK's session manager, once started
        self._ready: asyncio.Event | None = None
        self._closing: asyncio.Event | None = None
        self._transport: asyncio.Task[None] | None = None
        self._failed: str | None = None

    @property
    def calls_in_progress(self) -> bool:
        return bool(self._stopping.calls)

    async def cut_short(self, within_s: float) -> None:
        """Before shutdown begins: the run_task calls end their runs and answer, while
        their streams are open (once it began, they were cut, or cancelled past the
        server's grace period with a traceback)."""
        await self._stopping.cut_short(within_s)

    @contextlib.asynccontextmanager
    async def run(self) -> AsyncIterator[None]:
        try:
            yield
        finally:
            if self._transport is not None and self._closing is not None:
                self._closing.set()
                await self._transport
            await self._stopping.wait()

    def _build(self) -> None:
        from mcp.server.transport_security import TransportSecuritySettings

        server = build_mcp_server(self._manager, self._stopping)
        # The token guards every request, and a web page cannot send it, so the SDK's
        # DNS-rebinding check (Host limited to loopback names) adds nothing and would
        # refuse a server bound with --allow-remote.
        server.streamable_http_app(
            transport_security=TransportSecuritySettings(enable_dns_rebinding_protection=False)
        )
        self._sessions = server.session_manager

    def _start(self) -> None:
        """Hold the transport's task group open in a task of its own until `run` ends;
        `_ready` is set once it runs, or once it failed (`_failed` says why)."""
        assert self._ready is not None
        ready, closing = self._ready, asyncio.Event()
        self._closing = closing

        async def hold() -> None:
            try:
                async with self._sessions.run():
                    ready.set()
                    await closing.wait()
            except Exception as exc:
                self._failed = str(exc)
            finally:
                ready.set()

        self._transport = asyncio.create_task(hold())

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        from fastapi.responses import JSONResponse

        if self._ready is None:
            self._ready = asyncio.Event()
            try:
                await asyncio.to_thread(self._build)  # 0.9 s of imports: not on the loop
            except Exception as exc:
                self._failed = str(exc)
                self._ready.set()
            else:
                self._start()
        await self._ready.wait()
        if self._failed is not None:
            failed = JSONResponse({"error": f"the MCP endpoint failed: {self._failed}"}, 500)
            await failed(scope, receive, send)
            return
        await self._sessions.handle_request(scope, receive, send)
