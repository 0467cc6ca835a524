"""The HTTP face: the service's routes, over one `SessionManager`.

Everything under `/v1` needs `Authorization: Bearer <token>`; a wrong or missing one is
a 401 that says nothing else. The web page (`/`, `/static/...`) holds no data: it asks
for the token and sends it like any client. Errors are JSON `{"error": "..."}`: 400 for
options lathe cannot honour, 404 for an unknown session or approval, 409 for a conflict
with a live session, 422 for a body of the wrong shape. The only streaming route is
`GET /v1/sessions/{id}/events` (`text/event-stream`; the OpenAPI schema says so).
`/mcp` is lathe as an MCP server over streamable HTTP (`mcp_server.HttpEndpoint`),
behind the same token.
"""

from __future__ import annotations

import secrets
from importlib import resources
from typing import Any, Literal

from fastapi import FastAPI, Header, HTTPException, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import FileResponse, JSONResponse
from pydantic import BaseModel, ConfigDict, Field
from starlette.exceptions import HTTPException as StarletteHTTPException

from lathe.errors import LatheError
from lathe.service.approvals import UnknownApproval, pending_json
from lathe.service.live import Approval, Seconds, SessionOptions, Text, Turns, Verify
from lathe.service.manager import SessionConflict, SessionManager, UnknownSession

API_VERSION = "v1"


class Error(BaseModel):
    """Every error answer: one line saying what was wrong and what to do."""

    error: str


_ERRORS = {
    400: "Options lathe cannot honour (no such model, no such workspace ...)",
    401: "No token, or a wrong one",
    404: "No such session or pending approval here",
    409: "A conflict with a live session (its workspace, its run)",
    422: "A body of the wrong shape",
}


class Message(BaseModel):
    model_config = ConfigDict(extra="forbid")
    text: Text = Field(
        pattern=r"\S",  # not only whitespace: `lathe run "   "` is refused too
        description="The user's message: a task or a follow-up.",
    )


class Answer(BaseModel):
    model_config = ConfigDict(extra="forbid")
    choice: Literal["once", "always", "deny"]
    reason: Text = Field(default="", description="A denial's reason, given to the model.")


class ResumeOptions(BaseModel):
    """Changes to a stored session's options when it is served again."""

    model_config = ConfigDict(extra="forbid")
    model: Text | None = None
    base_url: Text | None = None
    approval: Approval | None = None
    verify: Verify | None = None
    max_turns: Turns | None = None
    approval_timeout_s: Seconds | None = None


def create_app(manager: SessionManager, token: str) -> FastAPI:
    from lathe import __version__

    app = FastAPI(
        title="lathe",
        version=__version__,
        openapi_url=None,  # served below, behind the token like every route under /v1
        responses={
            code: {"model": Error, "description": meaning} for code, meaning in _ERRORS.items()
        },
        docs_url=None,
        redoc_url=None,
    )

    def token_ok(authorization: bytes) -> bool:
        """The header's own bytes against the token's (printable ASCII: `server.py`)."""
        scheme, _, given = authorization.partition(b" ")
        return scheme.lower() == b"bearer" and secrets.compare_digest(given.strip(), token.encode())

    app.add_middleware(_BodyLimit)  # inside the token gate: a stranger's body is never read
    app.add_middleware(_TokenGate, token_ok=token_ok)

    served = manager.get  # UnknownSession: a 404 (`_unknown`)

    v1 = f"/{API_VERSION}"

    @app.exception_handler(StarletteHTTPException)  # FastAPI's too, and unknown routes
    async def _http_error(request: Request, exc: StarletteHTTPException) -> JSONResponse:
        if unread := _unreadable_body(exc):
            return JSONResponse({"error": f"bad request: {unread}"}, 422)
        return JSONResponse({"error": exc.detail}, exc.status_code, headers=exc.headers)

    @app.exception_handler(RequestValidationError)
    async def _bad_body(request: Request, exc: RequestValidationError) -> JSONResponse:
        return JSONResponse({"error": f"bad request: {_body_problems(request, exc)}"}, 422)

    @app.exception_handler(UnknownSession)  # also when a session goes while a call waits
    async def _unknown(request: Request, exc: UnknownSession) -> JSONResponse:
        return JSONResponse({"error": str(exc)}, 404)

    @app.exception_handler(LatheError)
    async def _lathe_error(request: Request, exc: LatheError) -> JSONResponse:
        from lathe.session.lock import SessionInUse
        from lathe.workspace_lock import WorkspaceBusy

        # A conflict with another process too: a session or workspace it holds.
        conflict = isinstance(exc, (SessionConflict, SessionInUse, WorkspaceBusy))
        status = 409 if conflict else 400
        return JSONResponse({"error": str(exc)}, status)

    @app.get(f"{v1}/openapi.json", include_in_schema=False)
    async def openapi() -> dict[str, Any]:
        schema = app.openapi()
        schema.setdefault("components", {})["securitySchemes"] = {
            "bearer": {"type": "http", "scheme": "bearer"}
        }
        schema["security"] = [{"bearer": []}]
        return schema

    @app.get(f"{v1}/health")
    async def health() -> dict[str, Any]:
        return {"status": "ok", "version": __version__, "sessions": len(manager.sessions)}

    @app.get(f"{v1}/metrics")
    async def metrics() -> dict[str, Any]:
        return manager.metrics()

    @app.get(f"{v1}/schema/events")
    async def event_schema() -> dict[str, Any]:
        from lathe.ui.schema_cmd import event_schema

        return event_schema()

    @app.post(f"{v1}/sessions", status_code=201)
    async def create_session(options: SessionOptions) -> dict[str, Any]:
        return (await manager.create(options)).summary()

    @app.get(f"{v1}/sessions")
    async def list_sessions() -> dict[str, Any]:
        return {"sessions": [s.summary() for s in manager.sessions.values()],
                "problems": manager.problems}  # fmt: skip

    @app.get(f"{v1}/sessions/{{session_id}}")
    async def get_session(session_id: str) -> dict[str, Any]:
        return served(session_id).summary()

    @app.delete(f"{v1}/sessions/{{session_id}}")
    async def delete_session(session_id: str) -> dict[str, Any]:
        return await manager.delete(session_id)

    @app.post(f"{v1}/sessions/{{session_id}}/messages", status_code=202)
    async def post_message(session_id: str, message: Message) -> dict[str, Any]:
        queued = served(session_id).post(message.text)
        return {"id": session_id, "queued": queued}

    @app.post(f"{v1}/sessions/{{session_id}}/abort")
    async def abort(session_id: str) -> dict[str, Any]:
        return {"id": session_id, "aborted": await served(session_id).abort()}

    @app.post(f"{v1}/sessions/{{session_id}}/fork", status_code=201)
    async def fork(session_id: str) -> dict[str, Any]:
        return (await manager.fork(session_id)).summary()

    @app.post(f"{v1}/sessions/{{session_id}}/resume", status_code=201)
    async def resume(session_id: str, options: ResumeOptions | None = None) -> dict[str, Any]:
        changes = options.model_dump(exclude_none=True) if options else {}
        return (await manager.resume(session_id, changes)).summary()

    @app.get(f"{v1}/sessions/{{session_id}}/approvals")
    async def approvals(session_id: str) -> dict[str, Any]:
        pending = served(session_id).approver.pending.values()
        return {"approvals": [pending_json(p) for p in pending]}

    @app.post(f"{v1}/sessions/{{session_id}}/approvals/{{approval_id}}")
    async def answer(session_id: str, approval_id: str, answer: Answer) -> dict[str, Any]:
        try:
            served(session_id).answer(approval_id, answer.choice, answer.reason)
        except UnknownApproval:
            raise HTTPException(
                404, f"no pending approval {approval_id} in session {session_id}"
            ) from None
        return {"id": approval_id, "choice": answer.choice}

    @app.get(f"{v1}/sessions/{{session_id}}/transcript")
    async def transcript(session_id: str) -> dict[str, Any]:
        from dataclasses import asdict

        from lathe.session.transcript import text_of, transcript_blocks
        from lathe.ui.sessions_cmd import checkpoint_numbers

        session = served(session_id).session
        blocks = list(transcript_blocks(session, checkpoints=checkpoint_numbers(session)))
        text = text_of(session, blocks)
        return {"id": session_id, "text": text, "blocks": [asdict(block) for block in blocks]}

    @app.get(
        f"{v1}/sessions/{{session_id}}/events",
        response_class=_EventStream,
        responses={200: {"content": {"text/event-stream": {}}, "description": _STREAM}},
    )
    async def events(
        session_id: str,
        request: Request,
        after: int | None = None,
        follow: bool = True,
        last_event_id: str | None = Header(default=None),
    ) -> Any:
        from sse_starlette.sse import EventSourceResponse

        session = served(session_id)
        # A reconnecting client's Last-Event-ID is newer than the URL's `after` it kept.
        start = max(after or 0, _event_number(last_event_id))

        async def stream():
            async for number, wire in session.events(start, follow=follow):
                if await request.is_disconnected():
                    return
                yield {"id": str(number), "data": wire}

        return EventSourceResponse(stream(), ping=15)

    static = resources.files("lathe.service") / "static"

    @app.get("/", include_in_schema=False)
    async def page() -> FileResponse:
        return FileResponse(str(static / "index.html"), media_type="text/html", headers=_PAGE)

    @app.get("/static/{name}", include_in_schema=False)
    async def asset(name: str) -> FileResponse:
        if name not in _ASSETS:
            raise HTTPException(404, "not found")
        return FileResponse(str(static / name), media_type=_ASSETS[name], headers=_PAGE)

    # lathe as an MCP server over streamable HTTP (behind the token like /v1); server.py's
    # lifespan runs its transport (`app.state.mcp.run()`).
    from lathe.service.mcp_server import HttpEndpoint

    app.state.mcp = HttpEndpoint(manager)
    app.router.add_route("/mcp", app.state.mcp, include_in_schema=False)

    return app


_STREAM = (
    "Server-sent events: `id:` then `data:` with one event object (as `lathe run --json` "
    "prints it); reconnect with Last-Event-ID to miss nothing."
)
# The page loads nothing from elsewhere and runs no inline code; it is never framed.
_PAGE = {
    "Content-Security-Policy": "default-src 'self'; frame-ancestors 'none'",
    "Referrer-Policy": "no-referrer",
    "Cache-Control": "no-store",
}
_ASSETS = {"app.js": "text/javascript", "style.css": "text/css"}


def _body_problems(request: Request, exc: RequestValidationError) -> str:
    """What was wrong with a body, in a line: a JSON error's position as a character
    (`34: JSON decode error` read like a field), a body not sent as JSON named so."""
    problems = []
    for error in exc.errors():
        where = error["loc"][1:]
        if error["type"] == "json_invalid":
            at = f" at character {where[0]}" if where else ""
            cause = error.get("ctx", {}).get("error", "")
            problems.append(f"the body is not valid JSON{at}" + (f" ({cause})" if cause else ""))
        elif not where and not request.headers.get("content-type", "").startswith(
            "application/json"
        ):
            problems.append("send the body as JSON, with Content-Type: application/json")
        else:
            shown = ".".join(str(part) for part in where) or "body"
            problems.append(f"{shown}: {error['msg']}")
    return "; ".join(dict.fromkeys(problems))


def _unreadable_body(exc: StarletteHTTPException) -> str:
    """Why a JSON body could not be read, when FastAPI answers it with a bare 400
    ("There was an error parsing the body", raised from the cause); "" for any other
    error. Invalid JSON is a validation error instead (`_body_problems`)."""
    cause = exc.__cause__
    if isinstance(cause, UnicodeDecodeError):
        return (
            f"the body is not UTF-8 (byte 0x{cause.object[cause.start]:02x} at position "
            f"{cause.start}); send JSON encoded as UTF-8"
        )
    if isinstance(cause, RecursionError):
        return "the body's JSON is nested too deeply to read; send a flatter body"
    return ""


class _TokenGate:
    """Checks the bearer token of every request under /v1 and /mcp before routing, so
    nothing (body parsing, a validation error, an unknown route) answers a request
    without it; a refusal is a bare 401."""

    def __init__(self, app: Any, token_ok: Any) -> None:
        self.app = app
        self.token_ok = token_ok

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        path = scope.get("path", "") if scope["type"] == "http" else ""
        if path.startswith(("/v1", "/mcp")):
            headers = dict(scope.get("headers") or [])
            if not self.token_ok(headers.get(b"authorization", b"")):
                refused = JSONResponse(
                    {"error": "unauthorized"}, 401, headers={"WWW-Authenticate": "Bearer"}
                )
                await refused(scope, receive, send)
                return
        await self.app(scope, receive, send)


MAX_BODY_BYTES = 4 * 1024 * 1024
"""The largest request body the server reads: a message, a session's options, an MCP
call. Bigger ones are a 413, so no client can make the server hold an unbounded body."""


class _BodyLimit:
    """Reads each request body whole, up to `MAX_BODY_BYTES`, before the route sees it;
    over that (said by Content-Length or found while reading) the answer is a 413."""

    def __init__(self, app: Any) -> None:
        self.app = app

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        declared = dict(scope.get("headers") or []).get(b"content-length", b"0")
        if declared.isdigit() and int(declared) > MAX_BODY_BYTES:
            await _too_large(scope, receive, send)
            return
        body = bytearray()
        while True:
            message = await receive()
            if message["type"] == "http.disconnect":
                return
            body += message.get("body", b"")
            if len(body) > MAX_BODY_BYTES:
                await _too_large(scope, receive, send)
                return
            if not message.get("more_body"):
                break
        sent = False

        async def replay() -> Any:
            nonlocal sent
            if not sent:
                sent = True
                return {"type": "http.request", "body": bytes(body), "more_body": False}
            return await receive()  # after the body: wait for the client to leave

        await self.app(scope, replay, send)


async def _too_large(scope: Any, receive: Any, send: Any) -> None:
    refused = JSONResponse(
        {"error": f"the request body is over {MAX_BODY_BYTES:,} bytes; send less"}, 413
    )
    await refused(scope, receive, send)


class _EventStream(JSONResponse):
    media_type = "text/event-stream"


def _event_number(header: str | None) -> int:
    try:
        return max(0, int(header)) if header else 0
    except ValueError:
        return 0
