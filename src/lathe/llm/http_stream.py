"""The HTTP under a provider that speaks its wire protocol itself: an httpx2 client
built at its first use, one streamed POST whose error status is raised as `StatusError`,
and the JSON payloads of the reply's server-sent events.

The OpenAI-compatible provider talks to its endpoint through this module rather than
the `openai` SDK: importing the SDK builds its whole type tree, about a second of CPU
in every process that makes a model call, while all lathe used of it was one POST, an
SSE reader and its exception classes. The exceptions raised here are raw material for
`lathe.llm.errors_map`, the one place where they become lathe's errors.

httpx2 is imported only when a client is built (on the warm-up thread, see
`lathe.llm.registry`), so importing this module stays cheap.
"""

from __future__ import annotations

import functools
import json
import re
import sys
import threading
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from typing import Any

from lathe import __version__

USER_AGENT = f"lathe/{__version__}"


class StatusError(Exception):
    """The server answered an HTTP error status. `body` is the reply's body parsed as
    JSON where it is JSON, else its text."""

    def __init__(self, status: int, headers: Mapping[str, str], body: object) -> None:
        super().__init__(f"HTTP {status}")
        self.status = status
        self.headers = dict(headers)
        self.body = body


class MalformedReply(Exception):
    """A reply (or a chunk of one) of a shape the protocol does not have: `choices` that
    is not a list, say. What it says is the part that was wrong."""


class ReportedError(Exception):
    """The server reported an error inside a 200 reply, in place of the next chunk:
    `body` is the error's payload (usually `{"message": ..., "type": ...}`)."""

    def __init__(self, body: object) -> None:
        super().__init__("the server reported an error mid-stream")
        self.body = body


class ClientSetupError(Exception):
    """The HTTP client could not be built from the endpoint's settings (a header value
    that is not ASCII, say). `header` names the header at fault when one is known; what
    it says never holds a header's value, which may be the key."""

    def __init__(self, problem: str, header: str | None = None) -> None:
        super().__init__(problem)
        self.header = header


class LazyClient:
    """`get()` builds the client once with `build` (a caller arriving meanwhile waits for
    that build instead of starting another: the warm-up thread and the first request may
    ask at once); `close()` closes the one built, if any, with `close`, and the next
    `get()` builds a new one."""

    def __init__(self, build: Callable[[], Any], close: Callable[[Any], Awaitable[object]]) -> None:
        self._build = build
        self._close = close
        self._client: Any = None
        self._lock = threading.Lock()

    def get(self) -> Any:
        with self._lock:
            if self._client is None:
                self._client = self._build()
            return self._client

    async def close(self) -> None:
        with self._lock:
            client, self._client = self._client, None
        if client is not None:
            await self._close(client)


def new_client(base_url: str, headers: Mapping[str, str], idle_s: float) -> Any:
    """An httpx2 AsyncClient for `base_url`: every request carries `headers` (with
    lathe's User-Agent unless they set one; the URL's user:password as Basic auth unless
    they hold an Authorization header) and the base URL's query after its own path,
    each operation (connect, write, read, pool) times out after `idle_s` seconds without
    progress, and redirects are followed, as the vendors' SDKs follow them."""
    import httpx2

    _import_transport()
    base, query = without_query(base_url)
    base, sent = credentials_as_header(base, {"User-Agent": USER_AGENT, **headers})
    try:
        return httpx2.AsyncClient(
            base_url=base.rstrip("/") + "/",
            params=query,
            headers=sent,
            timeout=httpx2.Timeout(idle_s),
            follow_redirects=True,
            verify=_tls_context(),
        )
    except Exception as exc:  # each becomes one error the mapping knows
        raise _setup_error(exc) from None


# httpx2 names the header whose value it could not encode: "... (header 'Authorization')".
_HEADER_NAMED = re.compile(r"\(header '([^']+)'\)")


def _setup_error(exc: Exception) -> ClientSetupError:
    """`exc`, raised building a client, as a ClientSetupError that quotes none of its
    text (a header's value, or a URL's password, may be in it)."""
    if isinstance(exc, UnicodeEncodeError):
        named = _HEADER_NAMED.search(str(exc))
        return ClientSetupError("holds a character that is not ASCII", named and named[1])
    return ClientSetupError(f"the HTTP client could not be built ({type(exc).__name__})")


def credentials_as_header(url: str, headers: Mapping[str, str]) -> tuple[str, dict[str, str]]:
    """`url` without its user:password, and `headers` with them as Basic auth unless
    they hold an Authorization header: httpx would send the URL's in place of the API
    key's Bearer, the key dropped."""
    import base64
    from urllib.parse import unquote, urlsplit, urlunsplit

    sent = dict(headers)
    parts = urlsplit(url)
    if parts.username is None:
        return url, sent
    if not any(name.lower() == "authorization" for name in sent):
        pair = f"{unquote(parts.username)}:{unquote(parts.password or '')}"
        sent["Authorization"] = "Basic " + base64.b64encode(pair.encode()).decode()
    return urlunsplit(parts._replace(netloc=parts.netloc.rpartition("@")[2])), sent


def without_query(url: str) -> tuple[str, list[tuple[str, str]]]:
    """`url` without its query, and the query's pairs, for a client that adds each
    request's path to the URL's path and sends the pairs after it: left in the URL, an
    Azure-style `?api-version=...` went before the path (`/v1?api-version=.../models`)."""
    from urllib.parse import parse_qsl, urlsplit, urlunsplit

    parts = urlsplit(url)
    pairs = parse_qsl(parts.query, keep_blank_values=True)
    return urlunsplit(parts._replace(query="", fragment="")), pairs


def url_for(base_url: str, path: str) -> str:
    """`path` added to the path of `base_url`, the base URL's query kept after it."""
    from urllib.parse import urlsplit, urlunsplit

    parts = urlsplit(base_url)
    joined = parts.path.rstrip("/") + "/" + path.lstrip("/")
    return urlunsplit(parts._replace(path=joined, fragment=""))


@functools.cache
def _tls_context() -> Any:
    """The verifying TLS context every client shares (the one httpx2 would build for
    each). Loading the CA store costs ~28 ms and ~0.8 MB a client: once per process
    matters where one process holds many sessions (`lathe serve`)."""
    import httpcore2

    return httpcore2.default_ssl_context()


def _import_transport() -> None:
    """Import httpcore2 (the client's transport) without trio. httpcore2 imports trio
    when it is installed, to serve callers running under trio: 0.1 s of CPU in every
    lathe process, whose event loop is asyncio's. Hidden only while httpcore2 loads, and
    only when nothing has loaded trio already; httpcore2 under asyncio never uses it."""
    if "httpcore2" in sys.modules or "trio" in sys.modules:
        return
    sys.modules["trio"] = None  # type: ignore[assignment]  # its import now fails
    try:
        import httpcore2  # noqa: F401
    finally:
        if sys.modules.get("trio", 0) is None:
            del sys.modules["trio"]


async def post_streaming(client: Any, path: str, body: Mapping[str, Any] | bytes) -> Any:
    """POST `body` as JSON (`json_bytes`, unless it is encoded already) to `path` (relative
    to the client's base URL) and return the response with its body not yet read: the
    caller reads it and must `aclose()` it. An error status raises `StatusError` instead,
    the response read and closed."""
    content = body if isinstance(body, bytes) else json_bytes(body)
    request = client.build_request(
        "POST", path, content=content, headers={"Content-Type": "application/json"}
    )
    response = await client.send(request, stream=True)
    if response.status_code < 400:
        return response
    try:
        await response.aread()
    finally:
        await response.aclose()
    raise StatusError(response.status_code, response.headers, _parsed(response.text))


async def json_events(response: Any) -> AsyncIterator[object]:
    """Each server-sent event's data, parsed as JSON, until `data: [DONE]` or the end of
    the body. A payload with an `error` member raises `ReportedError`; data that is not
    JSON raises `json.JSONDecodeError`. After `[DONE]` the rest of the body is read and
    dropped, so that HTTP/1.1 can reuse the connection for the next request."""
    import httpx2

    done = False
    # No size limit on one event: a server may send a long tool call in one chunk.
    async for event in httpx2.EventSource(response, max_event_size=None):
        if done:
            continue
        if event.data.startswith("[DONE]"):
            done = True
            continue
        payload = json.loads(event.data)
        if isinstance(payload, Mapping) and payload.get("error"):
            raise ReportedError(payload["error"])
        yield payload


def is_json(response: Any) -> bool:
    """True when the reply is one JSON document rather than a stream of events (a server
    that ignored `stream: true`)."""
    said = content_type(response)
    return "json" in said and "event-stream" not in said


def is_event_stream(response: Any) -> bool:
    """True when the reply says it is a stream of server-sent events."""
    return "text/event-stream" in content_type(response).lower()


def content_type(response: Any) -> str:
    return response.headers.get("content-type", "")


async def body_start(response: Any, limit: int = 4096) -> bytes:
    """The first `limit` bytes of the reply's body (all of it when shorter), read no
    further: a reply that is not what was asked for is named by how it starts."""
    start = b""
    async for data in response.aiter_bytes():
        start += data
        if len(start) >= limit:
            break
    return start[:limit]


# How a body of server-sent events may start: a field, or a comment (a keep-alive).
_EVENTS_START = (b"data:", b"event:", b"id:", b":")


async def sniffed(response: Any) -> Any:
    """`response` as it is when its content type says JSON or server-sent events, else
    one that gives its whole body from the start, read here as far as needed to tell
    whether it starts as a stream of events does (`data:`, `event:`, `id:` or a `:`
    comment, after any whitespace): such a body is labelled `text/event-stream`,
    whatever its content type said (a proxy may drop it, or send `text/plain` or
    `application/octet-stream`). Anything else keeps its headers, for `not_a_reply`.
    Closing the response returned closes `response`."""
    import httpx2

    if is_json(response) or is_event_stream(response):
        return response
    chunks = response.aiter_bytes()
    start = b""
    async for data in chunks:  # left unfinished: the replay goes on from here
        start += data
        if len(start.lstrip()) >= max(map(len, _EVENTS_START)):
            break
    kept = {"content-encoding", "content-length"}  # the body given is decoded already
    headers = [(k, v) for k, v in response.headers.multi_items() if k.lower() not in kept]
    if start.lstrip().startswith(_EVENTS_START):
        headers = [(k, v) for k, v in headers if k.lower() != "content-type"]
        headers.append(("content-type", "text/event-stream"))

    class Replay(httpx2.AsyncByteStream):
        """The body, its start read already: the start, then the rest."""

        async def __aiter__(self) -> AsyncIterator[bytes]:
            if start:
                yield start
            async for data in chunks:
                yield data

        async def aclose(self) -> None:
            await chunks.aclose()
            await response.aclose()

    return httpx2.Response(
        response.status_code,
        headers=headers,
        stream=Replay(),
        request=response.request,
        extensions=response.extensions,
    )


def json_bytes(value: object) -> bytes:
    """`value` as the compact UTF-8 JSON a request body is sent as."""
    return json.dumps(value, ensure_ascii=False, separators=(",", ":")).encode()


def _parsed(text: str) -> object:
    try:
        return json.loads(text)
    except ValueError:
        return text
