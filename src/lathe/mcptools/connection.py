"""One MCP server's lifecycle in a session: started on first use, once, kept until
the session closes, restarted after a failure (at most `MAX_RESTARTS` times).

Contract of `McpConnection`:
- `list_tools`, `call_tool` and `read_resource` start the server when it is not
  running. Any failure of lathe's side of the exchange — the server did not start or
  answer the handshake within `startup_timeout_s`, a call took longer than
  `tool_timeout_s`, the process died or the connection broke — raises `McpFailure`
  with one sentence naming the server and what happened, and drops the connection so
  the next call starts the server again. An error the *tool* reports (`isError`) is a
  normal result, not a failure. A result the protocol does not allow (`"result": null`,
  content of an unknown type) raises `McpFailure` at once, saying so, and keeps the
  connection: the server answered, and its next answer may be fine.
- The SDK's client is entered and left inside one task this object owns (anyio's
  cancel scopes must be left in the task that entered them); callers in other tasks
  only send requests over it. `aclose` ends that task, and with it the server: the
  SDK's stdio transport closes the server's stdin, then terminates its process tree.
- A cancelled caller (Ctrl-C) cancels its request only; the server keeps running.
- A tool the SDK would refuse in a `tools/list` answer is left out of it before the SDK
  reads it (it refused the whole list for one malformed tool), and a page cursor the
  server repeats ends the listing; `listing_notes` says what the last listing lost.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import functools
import logging
import os
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from lathe.errors import LatheError, ToolError
from lathe.mcptools.servers import ServerEntry, expanded

MAX_RESTARTS = 3


class McpFailure(ToolError):
    """The server could not do what was asked; the message names it and says why."""


# What the SDK says of a connection that closed, with the code a server may also give
# an error of its own (-32000, the first of the codes left to servers).
_SDK_CLOSED = "Connection closed"
# Pages in a row adding no tool after which a listing that names ever new pages stops.
_IDLE_PAGES = 3
# The `data` of the error answer that stands for an answer the SDK could not read
# (`_unreadable_answer`), so the request that waits for it says what was wrong.
_MALFORMED = "lathe: malformed result"


class McpConnection:
    def __init__(self, entry: ServerEntry, workspace: Path, log_dir: Path | None) -> None:
        self.entry = entry
        self._workspace = workspace.resolve()  # a relative one would be joined to itself
        self._log_dir = log_dir
        self._client: Any = None
        self._task: asyncio.Task[None] | None = None
        self._stop: asyncio.Event | None = None
        self._ready: asyncio.Future[Any] | None = None  # done once the handshake ended
        self._lock: asyncio.Lock | None = None
        self.starts = 0
        self.last_error: str | None = None
        self.protocol: str | None = None  # the protocol version the handshake agreed on
        self.listing_notes: list[str] = []
        """One line for each tool the last `list_tools` left out (malformed), and for a
        listing cut short (a repeated page cursor)."""
        self._left_out: dict[str, None] = {}  # noted as the answers arrive, in order
        # Awaited each time the server has started (the session refreshes its tool list).
        self.on_started: Callable[[McpConnection], Awaitable[None]] | None = None

    @property
    def name(self) -> str:
        return self.entry.name

    @property
    def running(self) -> bool:
        return self._client is not None and self._task is not None and not self._task.done()

    @property
    def _startup_s(self) -> float:
        return self.entry.config.startup_timeout_s

    async def list_tools(self) -> list[Any]:
        """Every tool the server offers (all pages), fetched fresh; a listing that would
        not end (a page named twice, or `_IDLE_PAGES` pages in a row adding no tool)
        stops with a note."""

        async def fetch(client: Any) -> list[Any]:
            tools: dict[str, Any] = {}  # by name: a page given again adds none twice
            cursor, seen, idle = None, set(), 0
            self._left_out = {}
            while True:
                page = await client.list_tools(cursor=cursor, cache_mode="refresh")
                known = len(tools)
                for tool in page.tools:
                    tools.setdefault(tool.name, tool)
                idle = idle + 1 if len(tools) == known else 0
                cursor = page.next_cursor
                if not cursor or cursor in seen or idle >= _IDLE_PAGES:
                    break
                seen.add(cursor)
            self.listing_notes = list(self._left_out)
            kept = f"{len(tools)} tool{'' if len(tools) == 1 else 's'} it had listed"
            if cursor in seen:  # it named a page it had given: asking again would never end
                self.listing_notes.append(
                    f"MCP server {self.name} named the same next page ({_shown(cursor)}) "
                    f"twice while listing its tools; lathe stopped there, keeping the {kept}"
                )
            elif cursor:  # a new page each time, adding nothing: it may never end either
                self.listing_notes.append(
                    f"MCP server {self.name} named {_IDLE_PAGES} next pages in a row that "
                    f"added no tool while listing its tools; lathe stopped there, keeping "
                    f"the {kept}"
                )
            return list(tools.values())

        return await self._request("listing its tools", fetch, self._startup_s, listing=True)

    async def list_resources(self) -> list[Any]:
        async def fetch(client: Any) -> list[Any]:
            if client.server_capabilities.resources is None:
                return []
            return list((await client.list_resources(cache_mode="refresh")).resources)

        return await self._request("listing its resources", fetch, self._startup_s, listing=True)

    async def list_prompts(self) -> list[Any]:
        async def fetch(client: Any) -> list[Any]:
            if client.server_capabilities.prompts is None:
                return []
            return list((await client.list_prompts(cache_mode="refresh")).prompts)

        return await self._request("listing its prompts", fetch, self._startup_s, listing=True)

    async def call_tool(self, tool: str, arguments: dict[str, Any]) -> Any:
        timeout = self.entry.config.tool_timeout_s

        async def call(client: Any) -> Any:
            return await client.call_tool(tool, arguments, read_timeout_seconds=timeout)

        return await self._request(f"running {tool}", call, timeout, result_of=tool)

    async def read_resource(self, uri: str) -> Any:
        async def read(client: Any) -> Any:
            return await client.read_resource(uri)

        timeout = self.entry.config.tool_timeout_s
        return await self._request(f"reading {uri}", read, timeout, result_of=uri)

    async def _request(
        self,
        doing: str,
        request: Callable[[Any], Awaitable[Any]],
        timeout: float,
        *,
        listing: bool = False,
        result_of: str = "",
    ) -> Any:
        """`request` over the running client. A caller cancelled meanwhile (Ctrl-C) is
        cancelled however the SDK ended the request: its anyio side may answer the
        cancellation with a result or another error, which would otherwise swallow it
        and leave the run going. `listing`: a failure says nothing of a next call (the
        caller of a listing says what follows). `result_of`: what a malformed result is
        said to be the result of (the tool, the resource), else the request is named."""
        caller = asyncio.current_task()
        try:
            return await self._request_once(doing, request, timeout, listing, result_of)
        finally:
            if caller is not None and caller.cancelling():
                raise asyncio.CancelledError

    async def _request_once(
        self,
        doing: str,
        request: Callable[[Any], Awaitable[Any]],
        timeout: float,
        listing: bool,
        result_of: str,
    ) -> Any:
        from mcp import MCPError
        from mcp.types import CONNECTION_CLOSED, REQUEST_TIMEOUT
        from pydantic import ValidationError

        client = await self._ensure_started()
        served_by = self._task  # a late failure must not end a server started since
        malformed = (
            f"MCP server {self.name} sent a malformed result "
            f"{f'for {result_of}' if result_of else f'while {doing}'}"
        )
        try:
            # The SDK's own read timeout answers first; this one catches a transport
            # that stops without failing the request.
            async with asyncio.timeout(timeout + 5):
                return await request(client)
        except ValidationError as exc:  # the server answered, wrongly: the connection holds
            raise McpFailure(f"{malformed}: {_result_problem(exc)}") from None
        except MCPError as exc:
            if exc.error.data == _MALFORMED:
                raise McpFailure(f"{malformed}: {exc.error.message}") from None
            if exc.code == REQUEST_TIMEOUT:
                await self._drop(
                    f"did not answer within {timeout:g} s while {doing}", served_by, listing
                )
            elif exc.code == CONNECTION_CLOSED and exc.error.message == _SDK_CLOSED:
                await self._drop(
                    f"closed the connection while {doing} (it may have crashed)",
                    served_by,
                    listing,
                )
            message = exc.error.message
            raise McpFailure(f"MCP server {self.name} refused {doing}: {message}") from None
        except TimeoutError:
            await self._drop(
                f"did not answer within {timeout:g} s while {doing}", served_by, listing
            )
        except Exception as exc:  # the transport broke: the process died, the socket closed
            if not self.running:
                await self._drop(f"stopped while {doing} (it may have crashed)", served_by, listing)
            await self._drop(f"failed while {doing}: {_describe(exc)}", served_by, listing)
        raise AssertionError("unreachable")  # _drop always raises

    async def _ensure_started(self) -> Any:
        if self._lock is None:
            self._lock = asyncio.Lock()
        async with self._lock:
            if self.running:
                return self._client
            if self._task is not None:  # it ran and failed: a restart
                await self._end_task()
            if self.starts > MAX_RESTARTS:
                raise McpFailure(
                    f"MCP server {self.name} is not available: it failed "
                    f"{MAX_RESTARTS + 1} times in this session ({self.last_error}); "
                    "lathe no longer restarts it"
                )
            self.starts += 1
            ready: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
            self._ready = ready
            self._stop = asyncio.Event()
            self._task = asyncio.create_task(self._serve(ready), name=f"mcp:{self.name}")
            timeout = self.entry.config.startup_timeout_s
            try:
                self._client = await asyncio.wait_for(asyncio.shield(ready), timeout)
            except TimeoutError:
                await self._end_task(at_once=True)
                self.last_error = f"did not start within {timeout:g} s"
                raise McpFailure(
                    f"MCP server {self.name} did not start and answer the handshake within "
                    f"{timeout:g} s (mcp.servers.{self.name}.startup_timeout_s)"
                ) from None
            except McpFailure as exc:
                await self._end_task()
                self.last_error = str(exc)
                raise
            except asyncio.CancelledError:  # Ctrl-C while it starts: stop it now
                await self._end_task(at_once=True)
                raise
            if self.on_started is not None:
                await self.on_started(self)
            return self._client

    async def _serve(self, ready: asyncio.Future[Any]) -> None:
        """Own the SDK client: enter it, publish it, wait for the stop, leave it. A URL
        with transport "auto" that streamable HTTP cannot reach is tried over SSE."""
        from mcp import Client

        assert self._stop is not None
        _route_sdk_log()
        _SERVING.set(self)  # for what the SDK logs from the tasks this one starts
        config = self.entry.config
        kinds = ["sse"] if config.transport == "sse" else ["streamable-http"]
        if config.url is not None and config.transport == "auto":
            kinds.append("sse")
        failure: Exception | None = None
        try:
            for kind in kinds:
                try:
                    async with contextlib.AsyncExitStack() as stack:
                        transport = _checked_answers(self._transport(stack, kind), self)
                        client = await stack.enter_async_context(
                            Client(transport, read_timeout_seconds=config.tool_timeout_s)
                        )
                        self.protocol = client.protocol_version
                        ready.set_result(client)
                        await self._stop.wait()
                        return
                except Exception as exc:  # the transport or the handshake failed
                    if ready.done():
                        return  # it ran, then broke: the request that saw it reports it
                    failure = exc
            if isinstance(failure, LatheError):  # lathe's own refusal: nothing was started
                ready.set_exception(McpFailure(f"MCP server {self.name} cannot start: {failure}"))
            elif failure is not None:
                where = (
                    f"; what it printed is in {self._log_dir / f'mcp-{self.name}.log'}"
                    if self._log_dir is not None and config.command is not None
                    else ""
                )
                ready.set_exception(
                    McpFailure(
                        f"MCP server {self.name} failed to start: {_describe(failure)}{where}"
                    )
                )
        finally:
            self._client = None
            if not ready.done():
                ready.cancel()

    def _transport(self, stack: contextlib.AsyncExitStack, kind: str) -> Any:
        config, name = self.entry.config, self.name
        if config.command is not None:
            import shutil
            import sys

            from mcp import StdioServerParameters
            from mcp.client.stdio import stdio_client

            from lathe.exec.supervision import supervised

            cwd = Path(expanded(config.cwd, server=name)) if config.cwd else self._workspace
            env = {key: expanded(value, server=name) for key, value in config.env.items()}
            command = expanded(config.command, server=name)
            # Found here, as the SDK would: the supervisor's own "cannot start" would
            # reach the model as a closed connection. A path is the server's cwd's.
            search = env.get("PATH", os.environ.get("PATH"))
            found = shutil.which(command, path=search) if "/" not in command else command
            if found is None:
                raise McpFailure(f"command {command!r} not found on PATH")
            if problem := _path_problem(command, self._workspace / cwd):
                raise McpFailure(problem)
            # Under lathe's supervisor: what the server starts (node under npx, a
            # browser) stops with it, also when it exits at once on its stdin closing.
            argv = supervised(
                [found, *(expanded(arg, server=name) for arg in config.args)],
                lc_ctype=env.get("LC_CTYPE"),
            )
            params = StdioServerParameters(
                command=sys.executable,
                args=argv[1:],
                env=env,
                cwd=self._workspace / cwd,
                encoding_error_handler="replace",
            )
            return stdio_client(params, errlog=stack.enter_context(self._errlog()))
        url = expanded(config.url or "", server=name)
        headers = {key: expanded(value, server=name) for key, value in config.headers.items()}
        if kind == "sse":
            from mcp.client.sse import sse_client

            return sse_client(url, headers=headers)
        from mcp.client.streamable_http import streamable_http_client
        from mcp.shared._httpx_utils import create_mcp_http_client

        http_client = create_mcp_http_client(headers=headers)
        stack.push_async_callback(http_client.aclose)
        return streamable_http_client(url, http_client=http_client)

    def _errlog(self) -> Any:
        """Where the server's stderr goes: a log per server (never lathe's terminal),
        readable by the user alone, through a pipe whose lines are masked on their way
        (the values its settings take from the environment: a server printing its
        configuration printed its token there)."""
        import os
        import threading

        from lathe.mcptools.servers import entry_secrets

        if self._log_dir is None:
            return open(os.devnull, "w")  # closed by the exit stack
        self._log_dir.mkdir(parents=True, exist_ok=True)
        log = os.open(
            self._log_dir / f"mcp-{self.name}.log", os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600
        )
        os.fchmod(log, 0o600)  # one an older lathe made readable by all
        read_end, write_end = os.pipe()
        secrets = sorted(entry_secrets(self.entry), key=len, reverse=True)
        threading.Thread(
            target=_copy_masked, args=(read_end, log, secrets), daemon=True, name="mcp-log"
        ).start()
        return os.fdopen(write_end, "w", encoding="utf-8")  # closed by the exit stack

    async def _drop(
        self, what: str, served_by: asyncio.Task[None] | None, listing: bool = False
    ) -> None:
        """Forget the broken connection (the next request starts the server again) and
        raise the failure the model reads. `served_by`: the connection's task when the
        request began; when another has replaced it (a parallel call failed first and a
        third restarted the server), that new one is left running. `listing`: the
        failure of a listing, which says nothing of a next call (the run whose listing
        failed offers none of its tools)."""
        self.last_error = what
        if self._task is served_by:
            await self._end_task()
        if listing:
            raise McpFailure(f"MCP server {self.name} {what}")
        left = MAX_RESTARTS + 1 - self.starts
        again = (
            "the next call starts it again"
            if left > 0
            else "it will not be restarted in this session"
        )
        raise McpFailure(f"MCP server {self.name} {what}; {again}")

    async def _end_task(self, *, at_once: bool = False) -> None:
        """Stop the server. A running client is left the way the SDK leaves it (stdin
        closed, then SIGTERM, then SIGKILL, each step bounded). The task is cancelled
        at once instead when `at_once`, when the client never became ready (still in
        the handshake, which the stop cannot reach: waiting first cost 8 s, after a
        startup timeout, at Ctrl-C, at the end of an `--mcp-eager` run), and when the
        caller is cancelled meanwhile (Ctrl-C), which is raised again once it is."""
        task, self._task = self._task, None
        self._client = None
        if task is None:
            return
        if self._stop is not None:
            self._stop.set()
        interrupted = False
        if not at_once and self._ready is not None and self._ready.done():
            try:
                await asyncio.wait_for(asyncio.shield(task), 8)
            except asyncio.CancelledError:
                interrupted = not task.cancelled()  # else the task itself was cancelled
            except Exception:  # the server's own failure: it is stopped all the same
                pass
        if not task.done():
            task.cancel()
            with contextlib.suppress(Exception, asyncio.CancelledError):
                await task
        if interrupted:
            raise asyncio.CancelledError

    async def aclose(self) -> None:
        await self._end_task()

    def _valid_tools(self, result: dict[str, Any]) -> list[Any]:
        """The tools of a `tools/list` answer the SDK accepts, judged as it judges a
        whole answer (the negotiated version's schema, then its `Tool`): the whole answer
        once, and only when that fails each tool alone, to leave out those wrong; each
        left out is noted, naming it and what is wrong. An answer wrong besides its
        tools is left whole, for the SDK to refuse."""
        from mcp.types import Tool, methods
        from pydantic import ValidationError

        version = self.protocol or "2025-11-25"  # the SDK's own fallback

        def problem(answer: dict[str, Any]) -> str | None:
            try:
                with contextlib.suppress(KeyError):  # no schema for this version
                    methods.validate_server_result("tools/list", version, answer)
            except ValidationError as exc:
                return _field_problem(exc, skip=2)  # the path starts ("tools", 0)
            except ValueError:  # a version the schemas do not know: the SDK judges
                return None
            try:
                for tool in answer["tools"]:
                    Tool.model_validate(tool, by_name=False)
            except ValidationError as exc:
                return _field_problem(exc)
            return None

        # One tool at a time cost twice the whole answer's check, on the event loop.
        if problem(result) is None or problem({**result, "tools": []}) is not None:
            return result["tools"]
        kept = []
        for index, tool in enumerate(result["tools"]):
            wrong = problem({**result, "tools": [tool]})
            if wrong is None:
                kept.append(tool)
                continue
            name = tool.get("name") if isinstance(tool, dict) else None
            which = _shown(name) if isinstance(name, str) else f"number {index + 1}"
            self._left_out[
                f"MCP server {self.name}: its tool {which} is left out ({wrong}); "
                "its other tools are offered"
            ] = None
        return kept


def _path_problem(command: str, cwd: Path) -> str | None:
    """Why the command, a path (taken from `cwd` when relative), cannot be run, naming
    it; None for a bare name or a path that can run."""
    if "/" not in command:
        return None
    path = cwd / Path(command)
    named = repr(command) if path == Path(command) else f"{command!r} ({path})"
    if path.is_dir():
        return f"command {named} is a directory"
    if not path.exists():
        return f"command {named} does not exist"
    if not os.access(path, os.X_OK):
        return f"command {named} is not executable"
    return None


@contextlib.asynccontextmanager
async def _checked_answers(transport: Any, connection: McpConnection) -> Any:
    """`transport` (the SDK's: it gives its receiving and sending streams), each
    `tools/list` answer it receives rid of the tools the SDK would refuse
    (`McpConnection._valid_tools`) before the SDK reads it, and an answer it could not
    read at all given to its request as an error (`_unreadable_answer`). Done on the
    wire because the SDK validates a list whole, and relists to check each call's
    result: one tool with `"required": "a"` had cost every tool of the server; and
    because the SDK drops an answer it cannot read, so its request waited out
    `tool_timeout_s` (`"result": null`)."""
    async with transport as (receiving, sending):
        yield _CheckedAnswers(receiving, connection), sending


class _CheckedAnswers:
    """A receiving stream that passes on what it receives, an answer holding a `tools`
    list (only `tools/list` answers have one) with its valid tools only, and in place of
    an answer the transport could not read, an error answer to the same request."""

    def __init__(self, stream: Any, connection: McpConnection) -> None:
        self._stream = stream
        self._connection = connection

    async def __aenter__(self) -> _CheckedAnswers:
        await self._stream.__aenter__()
        return self

    async def __aexit__(self, *exc: Any) -> Any:
        return await self._stream.__aexit__(*exc)

    def __aiter__(self) -> _CheckedAnswers:
        return self

    async def __anext__(self) -> Any:
        item = await self._stream.__anext__()
        if isinstance(item, Exception):  # a line the transport could not read
            return _unreadable_answer(item) or item
        result = getattr(getattr(item, "message", None), "result", None)
        if isinstance(result, dict) and isinstance(result.get("tools"), list):
            result["tools"] = self._connection._valid_tools(result)
        return item

    def __getattr__(self, name: str) -> Any:
        return getattr(self._stream, name)


def _unreadable_answer(exc: Exception) -> Any:
    """An error answer (its `data` `_MALFORMED`, its message what is wrong) to the
    request the answer `exc` failed to read was for, when it was one (an `id` and a
    `result`, no `method`); else None. The transport reads each message as one of the
    JSON-RPC kinds, and the error for each kind it is not holds the message whole."""
    from mcp.shared.message import SessionMessage
    from mcp.types import INTERNAL_ERROR, ErrorData, JSONRPCError
    from pydantic import ValidationError

    if not isinstance(exc, ValidationError):
        return None
    errors = exc.errors(include_url=False)
    whole = next((e["input"] for e in errors if isinstance(e.get("input"), dict)), {})
    answer_to = whole.get("id")
    if "result" not in whole or "method" in whole or "error" in whole:
        return None
    if not isinstance(answer_to, int | str) or isinstance(answer_to, bool):
        return None
    problems = [e for e in errors if e["loc"][:1] == ("JSONRPCResponse",)]
    if not problems:
        return None
    where = ".".join(str(part) for part in problems[0]["loc"][1:])
    said = f"{where}: {problems[0]['msg']}"
    error = ErrorData(code=INTERNAL_ERROR, message=said, data=_MALFORMED)
    return SessionMessage(JSONRPCError(jsonrpc="2.0", id=answer_to, error=error))


def _result_problem(exc: Any) -> str:
    """What is wrong with a result, from the pydantic ValidationError of its check: the
    first error's field, and when that field is one of several forms (a content part:
    `TextContent`, `ImageContent`...), the forms it is none of, not what the first of
    them lacks (`content.0.TextContent.text: Field required` for a part of a type the
    protocol does not know)."""
    errors = exc.errors(include_url=False, include_input=False)
    loc = errors[0]["loc"]
    form = next((i for i, part in enumerate(loc) if str(part)[:1].isupper()), None)
    if form is None:
        return _field_problem(exc)
    where = loc[:form]
    forms = dict.fromkeys(
        str(e["loc"][form]) for e in errors if e["loc"][:form] == where and len(e["loc"]) > form
    )
    return f"{'.'.join(str(part) for part in where) or 'it'} is none of {', '.join(forms)}"


def _shown(text: str) -> str:
    """A server's word as a line may quote it: escaped, and cut past 60 characters."""
    return repr(text if len(text) <= 60 else text[:57] + "...")


def _field_problem(exc: Any, skip: int = 0) -> str:
    """`field.path: what is wrong` of a pydantic ValidationError's first error, the
    first `skip` parts of its path left out; never the value (a server's words)."""
    first = exc.errors(include_url=False, include_input=False)[0]
    where = ".".join(str(part) for part in first["loc"][skip:])
    return f"{where}: {first['msg']}" if where else first["msg"]


def _describe(exc: BaseException) -> str:
    """One line for an exception, looking inside exception groups; of a validation
    error, the field and what is wrong with it (its first line named only the model)."""
    from pydantic import ValidationError

    while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        exc = exc.exceptions[0]
    if isinstance(exc, ValidationError) and exc.errors():
        return f"{type(exc).__name__}: {_field_problem(exc)}"
    text = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


_SERVING: contextvars.ContextVar[McpConnection | None] = contextvars.ContextVar(
    "lathe_mcp_serving", default=None
)


@functools.cache
def _route_sdk_log() -> None:
    """What the SDK logs (a line on a server's stdout that is not JSON-RPC: a banner, a
    token it printed) goes to that server's log, masked, as one line; it had reached
    lathe's terminal through Python's last-resort handler, a traceback a line, the
    token in clear."""
    # The client's loggers alone: `lathe serve`'s own MCP endpoint logs as before.
    sdk = logging.getLogger("mcp.client")
    sdk.addHandler(_ServerLog())
    sdk.propagate = False


class _ServerLog(logging.Handler):
    def emit(self, record: logging.LogRecord) -> None:
        connection = _SERVING.get()
        if connection is None or connection._log_dir is None:
            return
        from lathe.mcptools.servers import entry_secrets
        from lathe.obs.redact import Redactor

        text = record.getMessage()
        if record.exc_info and record.exc_info[1] is not None:
            detail = str(record.exc_info[1]).strip().splitlines()
            text += f": {' '.join(line.strip() for line in detail[:3])}"
        text = Redactor(entry_secrets(connection.entry)).mask(text)
        path = connection._log_dir / f"mcp-{connection.name}.log"
        with contextlib.suppress(OSError):
            log = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
            try:
                os.write(log, f"lathe: {text}\n".encode("utf-8", "replace"))
            finally:
                os.close(log)


def _copy_masked(read_end: int, log: int, secrets: list[str]) -> None:
    """Lines from `read_end` into `log`, each of `secrets` masked, until the server and
    lathe have both closed the pipe."""
    import os

    from lathe.config.secrets import mask_secret

    masks = [(secret.encode(), mask_secret(secret).encode()) for secret in secrets]
    with os.fdopen(read_end, "rb") as lines:
        try:
            for line in lines:
                for secret, masked in masks:
                    line = line.replace(secret, masked)
                os.write(log, line)
        finally:
            os.close(log)
