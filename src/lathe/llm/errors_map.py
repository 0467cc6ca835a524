"""Where the exceptions of a model call become lathe's errors.

`to_provider_error` (the OpenAI-compatible provider's; `lathe.llm.anthropic` has its own
for its SDK, built on the shared helpers here) knows every exception raised on the way
in and while a stream is read: `lathe.llm.http_stream`'s `StatusError` and
`ReportedError`, httpx2's, the OS's; anything it does not know is a bug in lathe and is
left alone (it returns None) so it surfaces as one. Messages are written for the user:
they say what failed, where, and what to change, and never contain the API key.

httpx2 is imported lazily (inside the function), because importing this module must
stay cheap for `lathe --help`.
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import AsyncIterator, Callable, Mapping
from dataclasses import dataclass
from email.utils import parsedate_to_datetime

from lathe.config.secrets import secret_spellings
from lathe.errors import (
    AuthError,
    BadRequest,
    ContextTooLong,
    NothingListening,
    Overloaded,
    ProviderError,
    RateLimited,
    Transport,
    UntrustedServer,
)
from lathe.llm.base import StreamEvent
from lathe.llm.http_stream import ClientSetupError, MalformedReply, ReportedError, StatusError
from lathe.llm.timeouts import Timeouts, TotalTimeExceeded
from lathe.net import is_loopback

_CONTEXT_TOO_LONG = re.compile(
    r"context_length_exceeded|context[ _]length|maximum context|context window"
    r"|prompt is too long|too many tokens|input is too long|context size"
    r"|reduce the length of the messages|exceed context limit",
    re.IGNORECASE,
)
# The code of an error object saying the prompt is past the window, whatever its words
# (OpenAI's, and the servers copying its errors). Anthropic has none: its type is
# invalid_request_error, its words "prompt is too long", which the pattern knows.
_TOO_LONG_CODE = "context_length_exceeded"
# The numbers servers give when they refuse a request as too long, as (pattern, which
# group is the window, which the prompt), the first that matches: OpenAI and vLLM (the
# messages apart from the completion asked for, where given), llama-server, Anthropic's
# prompt alone and its prompt with max_tokens.
_WINDOW_AND_REQUEST = (
    (
        re.compile(
            r"maximum context length is (\d+) tokens.*?"
            r"\((\d+) in the messages(?:, (\d+) in the functions)?",
            re.S,
        ),
        1,
        2,
    ),
    (
        re.compile(
            r"maximum context length is (\d+) tokens.*?(?:requested|resulted in) (\d+)", re.S
        ),
        1,
        2,
    ),
    (re.compile(r"request \((\d+) tokens\) exceeds the available context size \((\d+)"), 2, 1),
    (re.compile(r"prompt is too long: (\d+) tokens > (\d+)"), 2, 1),
    (re.compile(r"exceed context limit: (\d+) \+ \d+ > (\d+)"), 2, 1),
)
_MAX_SERVER_MESSAGE = 500
# A server that parses the model's tool calls itself (llama-server) fails the request
# when the model wrote one it cannot parse.
_UNPARSED_OUTPUT = re.compile(r"failed to parse tool call|parse tool call arguments", re.IGNORECASE)


@dataclass(frozen=True)
class ErrorContext:
    """What the messages may name: the endpoint, the model, the key's variable and the
    limits (with the keys that set them)."""

    model: str
    base_url: str
    api_key_env: str
    api_key: str  # only so it can be scrubbed from anything the server echoes
    timeouts: Timeouts
    base_url_fix: str = "fix the base URL"
    """What to change when nothing listens there, named where the URL was set
    (`ResolvedModel.base_url_fix`: `fix --base-url`, `set providers.ollama.base_url`)."""


def to_provider_error(exc: BaseException, ctx: ErrorContext) -> ProviderError | None:
    """The lathe error for an HTTP/httpx2/OS exception, or None when it is not one of those."""
    import httpx2

    if isinstance(exc, ProviderError):
        return exc
    if isinstance(exc, ClientSetupError):
        return unsendable_header(ctx, exc.header, str(exc))
    if quotes_a_header(exc):
        return unsendable_header(ctx)
    if isinstance(exc, StatusError):
        words = server_words(exc.body)
        code = _error_code(exc.body)
        if code == "insufficient_quota" and "quota" not in words:
            words += " (insufficient_quota)"
        elif code == _TOO_LONG_CODE and not _CONTEXT_TOO_LONG.search(words):
            words += f" ({code})"  # said so, it is compacted as the words would be
        return from_status(exc.status, exc.headers, words, ctx)
    if isinstance(exc, MalformedReply):
        return Transport(f"{ctx.base_url} sent a reply lathe cannot read: {exc}")
    if isinstance(exc, ReportedError):
        return stream_error(exc.body, ctx)
    if isinstance(exc, TotalTimeExceeded | httpx2.TimeoutException | TimeoutError):
        return timed_out(exc, ctx)
    if isinstance(exc, httpx2.TransportError | OSError):
        return connection_error(exc, ctx)
    if isinstance(exc, json.JSONDecodeError):
        return Transport(f"{ctx.base_url} sent a stream chunk that is not valid JSON")
    if isinstance(exc, httpx2.HTTPError | httpx2.InvalidURL):
        return BadRequest(scrub(f"the request to {ctx.base_url} could not be made: {exc}", ctx))
    return None


async def guarded(
    events: AsyncIterator[StreamEvent],
    to_error: Callable[[BaseException, ErrorContext], ProviderError | None],
    ctx: ErrorContext,
) -> AsyncIterator[StreamEvent]:
    """`events`, with the exceptions `to_error` knows raised as lathe's errors instead.

    The lathe error is raised outside the handler, so that neither its `__cause__` nor
    its `__context__` holds the SDK's exception, whose text can echo the key back from
    the server. Exceptions `to_error` does not know (bugs in lathe) propagate unchanged.
    """
    error: ProviderError | None = None
    try:
        async for event in events:
            yield event
    except Exception as exc:
        error = to_error(exc, ctx)
        if error is None or error is exc:
            raise
    if error is not None:
        raise error


def timed_out(exc: BaseException, ctx: ErrorContext) -> Transport:
    """The error for a limit of `ctx.timeouts` that was hit: the total when `exc` is
    TotalTimeExceeded, else the idle limit (httpx's timeouts are all set to it)."""
    limits = ctx.timeouts
    if isinstance(exc, TotalTimeExceeded):
        return Transport(
            f"the reply from {ctx.base_url} took more than {limits.total_s:g} s in all "
            f"({limits.total_key}); the server is too slow or the reply too long"
        )
    return Transport(
        f"no data from {ctx.base_url} for {limits.idle_s:g} s ({limits.idle_key}); "
        "the server may be stuck, overloaded or unreachable"
    )


# Of a 200 reply that is no model's, what its error shows.
_BODY_START_CHARS = 120


def not_a_reply(ctx: ErrorContext, content_type: str, body: bytes) -> BadRequest:
    """A 200 reply that is no model's (a network's login page, another API's JSON, text
    that is not JSON), named by its content type and the start of its body. Asking again
    gets the same page, so it is not retried: the base URL, or a proxy in the way, is
    what to check."""
    text = " ".join(body.decode("utf-8", "replace").split())
    more = "..." if len(text) > _BODY_START_CHARS else ""
    start = f'"{text[:_BODY_START_CHARS]}{more}"' if text else "an empty body"
    what = content_type.split(";")[0].strip() or "no content type"
    return BadRequest(
        scrub(
            f"{ctx.base_url} answered HTTP 200 with {what}, not a model's reply: {start}; "
            "check that the base URL is where the model's API starts (a proxy or a network's "
            "login page may be answering instead)",
            ctx,
        )
    )


def from_status(
    status: int, headers: Mapping[str, str], message: str, ctx: ErrorContext
) -> ProviderError:
    """Map an HTTP error status (with its headers and the server's message). The error
    keeps the status and the provider's request id."""
    error = _for_status(status, headers, message, ctx, f"HTTP {status}")
    error.status, error.request_id = status, request_id(headers)
    return error


def _for_status(
    status: int, headers: Mapping[str, str], message: str, ctx: ErrorContext, said_as: str
) -> ProviderError:
    """The error for `status`; `said_as` is how the server said it ("HTTP 401", or the
    code of an error it reported in a 200 reply), which the message names."""
    said = scrub(message, ctx)
    where = f"{ctx.base_url} ({said_as})"
    # billing: no wait makes it pass
    if status == 402 or (status == 429 and _QUOTA.search(message)):
        return BadRequest(
            f"{where} says the account's quota is used up: {said}; add credit or raise the "
            "limit with the provider (retrying cannot help)"
        )
    if status == 429:
        return RateLimited(f"rate limited by {where}: {said}", retry_after=retry_after(headers))
    if status in (401, 403):
        return AuthError(_auth_message(status, ctx, said_as))
    if status in (400, 413, 422) and _CONTEXT_TOO_LONG.search(message):
        return _too_long(message, said, ctx)
    if status == 404:
        return BadRequest(
            f"{where} found no model {ctx.model!r} ({said.rstrip('.')}); check the model "
            "name and that the base URL ends where the API starts (often /v1)"
        )
    if status == 408:
        return Transport(f"{where} timed out the request: {said}")
    if status >= 500 and status not in (501, 505):
        return Overloaded(
            f"{where} is failing or overloaded: {said}", retry_after=retry_after(headers)
        )
    return BadRequest(f"{where} refused the request: {said}")


def request_id(headers: Mapping[str, str]) -> str | None:
    """The provider's id of the request: `x-request-id` (OpenAI and most compatible
    servers) or `request-id` (Anthropic); None when the server sent neither."""
    lowered = {k.lower(): v for k, v in headers.items()}
    found = (lowered.get("x-request-id") or lowered.get("request-id") or "").strip()
    return found[:200] or None


# The longest wait a server's Retry-After is taken as: a longer one means the same (no
# wait lathe would make), and its date, 1e20 s away, is past what the clock can name.
_LONGEST_RETRY_AFTER_S = 100 * 365 * 24 * 3600.0


def retry_after(headers: Mapping[str, str]) -> float | None:
    """Seconds to wait from `retry-after-ms`, or `Retry-After` as seconds or an HTTP date,
    between 0 and a century."""
    lowered = {k.lower(): v for k, v in headers.items()}
    if (ms := _number(lowered.get("retry-after-ms"))) is not None:
        return _bounded(ms / 1000.0)
    raw = lowered.get("retry-after")
    if raw is None:
        return None
    if (seconds := _number(raw)) is not None:
        return _bounded(seconds)
    try:
        when = parsedate_to_datetime(raw)
    except (TypeError, ValueError, IndexError):
        return None
    return _bounded(when.timestamp() - time.time())


def _bounded(seconds: float) -> float:
    return min(max(seconds, 0.0), _LONGEST_RETRY_AFTER_S)


def unparsed_output(exc: BaseException) -> bool:
    """True when the server failed because it could not parse what the model wrote (an
    HTTP 500 or a mid-stream error saying so): the model's malformed output, which it
    can write again, not an outage to retry or give up on."""
    from_server = isinstance(exc, ReportedError) or (
        isinstance(exc, StatusError) and exc.status == 500
    )
    return from_server and bool(_UNPARSED_OUTPUT.search(server_words(exc.body)))


def mentions_stream_options(exc: BaseException) -> bool:
    """True for a 400/422 whose message blames `stream_options` (some servers reject it)."""
    if not isinstance(exc, StatusError) or exc.status not in (400, 422):
        return False
    text = f"{exc.body} {server_words(exc.body)}".lower()
    return "stream_options" in text or "include_usage" in text


def _number(raw: str | None) -> float | None:
    if raw is None:
        return None
    try:
        value = float(raw.strip())
    except ValueError:
        return None
    return value if value == value and value != float("inf") else None


def server_message(exc: BaseException) -> str:
    """The server's own words in an SDK exception: from its parsed body, else its message."""
    fallback = getattr(exc, "message", None) or str(exc)
    return server_words(getattr(exc, "body", None), fallback=fallback)


_QUOTA = re.compile(
    r"insufficient_quota|exceeded your current quota|credit balance is too low", re.IGNORECASE
)


def _error_code(body: object) -> str | None:
    """The `code` (or `type`) of an OpenAI-style error body."""
    inner = body.get("error", body) if isinstance(body, Mapping) else None
    if not isinstance(inner, Mapping):
        return None
    code = inner.get("code") or inner.get("type")
    return code if isinstance(code, str) else None


def server_words(body: object, *, fallback: str = "") -> str:
    """The server's own words in an error body (parsed JSON, or text): `error.message`
    (or `message`) of a JSON body, else the body itself, on one line and capped."""
    if isinstance(body, Mapping):
        inner = body.get("error", body)
        if isinstance(inner, Mapping) and isinstance(inner.get("message"), str):
            text = inner["message"]
        elif isinstance(inner, str):
            text = inner
        else:
            text = json.dumps(inner)[:_MAX_SERVER_MESSAGE]
    elif isinstance(body, str) and body.strip():
        text = body
    else:
        text = fallback
    text = " ".join(text.split())
    if len(text) > _MAX_SERVER_MESSAGE:
        text = text[:_MAX_SERVER_MESSAGE] + "..."
    return text or "(no message)"


def _too_long(message: str, said: str, ctx: ErrorContext) -> ContextTooLong:
    window = request = None
    for pattern, window_group, request_group in _WINDOW_AND_REQUEST:
        if found := pattern.search(message):
            window, request = int(found[window_group]), int(found[request_group])
            # OpenAI counts the tool definitions apart: they are prompt all the same.
            counted = found.groups()[max(window_group, request_group) :]
            request += sum(int(more) for more in counted if more)
            break
    return ContextTooLong(
        f"the conversation is too long for {ctx.model}: {said}",
        window_tokens=window,
        request_tokens=request,
    )


def stream_error(error: object, ctx: ErrorContext, *, streamed: bool = True) -> ProviderError:
    """An error the server reported inside a 200 reply: `error` is the error object (or
    its text) of an SSE event (`streamed`) or of a JSON body. A prompt past the window,
    by its words or by its code, is ContextTooLong (the run compacts and sends it again).
    Else its `status`, `code` or `type` is read as the HTTP status it stands for and
    mapped as that status is (a rejected key is AuthError, a spent quota or an unknown
    model a BadRequest: none is retried); with none of them known, or a 5xx, it is
    Overloaded as an outage is. The error has no HTTP status: the server answered 200."""
    message = server_words(error)
    said = scrub(message, ctx)
    how = "mid-stream" if streamed else "in its reply"
    if _CONTEXT_TOO_LONG.search(message) or _error_code(error) == _TOO_LONG_CODE:
        return _too_long(message, said, ctx)
    reported = _reported_status(error)
    if reported is not None and 400 <= reported[0] < 500:
        status, code = reported
        return _for_status(status, {}, message, ctx, f"{code} {how}")
    if "rate limit" in message.lower():  # an outage's code on a rate limit's words
        return RateLimited(f"rate limited by {ctx.base_url} {how}: {said}")
    what = reported[1] if reported is not None else "an error"
    return Overloaded(f"{ctx.base_url} reported {what} {how}: {said}")


# The codes and types of error objects (OpenAI's codes, Anthropic's types, Google's
# statuses) as the HTTP status each stands for, so an error reported inside a 200 reply
# maps as the same error answered with that status (a too-long prompt's code is
# ContextTooLong before any status: see stream_error).
_REPORTED_STATUS = {
    "invalid_request_error": 400,
    "invalid_api_key": 401,
    "authentication_error": 401,
    "unauthenticated": 401,
    "insufficient_quota": 402,
    "billing_error": 402,
    "permission_error": 403,
    "permission_denied": 403,
    "model_not_found": 404,
    "not_found_error": 404,
    "not_found": 404,
    "request_too_large": 413,
    "rate_limit_exceeded": 429,
    "rate_limit_error": 429,
    "resource_exhausted": 429,
    "api_error": 500,
    "server_error": 500,
    "unavailable": 503,
    "timeout_error": 504,
    "overloaded_error": 529,
}


def _reported_status(error: object) -> tuple[int, str] | None:
    """The HTTP status an error object stands for and the words that said it (`error
    401`, `insufficient_quota`): a number in its `status` or `code` first, then a code,
    status or type lathe knows; None when it names none. A body wrapping the object
    (`{"error": {...}}`) is read as the object, as `server_words` reads it."""
    if isinstance(error, Mapping) and isinstance(error.get("error"), Mapping):
        error = error["error"]
    if not isinstance(error, Mapping):
        return None
    fields = [error.get(key) for key in ("status", "code", "type")]
    for value in fields:
        text = str(value).strip() if isinstance(value, int | str) else ""
        if text.isdigit() and 400 <= int(text) < 600:
            return int(text), f"error {text}"
    for value in fields:
        if isinstance(value, str) and value.lower() in _REPORTED_STATUS:
            return _REPORTED_STATUS[value.lower()], value
    return None


NO_KEY = "no-key"
"""What is sent as the key to a local endpoint when none is set (llama.cpp, Ollama and
vLLM accept anything): a refusal of it means the server wants a key after all."""


def _auth_message(status: int, ctx: ErrorContext, said_as: str) -> str:
    if ctx.api_key in ("", NO_KEY):
        return (
            f"{ctx.base_url} requires an API key ({said_as}) and none is set; set {ctx.api_key_env}"
        )
    if status == 403:
        return (
            f"{ctx.base_url} refused the API key access to model {ctx.model!r} ({said_as}); "
            f"check {ctx.api_key_env} holds a key allowed to use this model"
        )
    return (
        f"the API key was rejected by {ctx.base_url} ({said_as}); "
        f"check {ctx.api_key_env} holds a valid key for this endpoint"
    )


def connection_error(exc: BaseException, ctx: ErrorContext) -> Transport:
    """A connection that failed or broke. Refused by this machine, it is NothingListening
    (retried only briefly): the answer is certain, and the user has a server to start. A
    remote refusal is a plain Transport, since a server being restarted refuses too."""
    chain = _chain(exc)
    causes = " ".join(str(e) for e in chain).lower()
    if "refused" in causes or any(isinstance(e, ConnectionRefusedError) for e in chain):
        if is_loopback(ctx.base_url):
            return NothingListening(
                f"nothing is listening at {ctx.base_url}: start the server or {ctx.base_url_fix}"
            )
        return Transport(
            f"could not connect to {ctx.base_url}: connection refused; is the server running?"
        )
    import ssl  # loaded by then: the HTTP client uses it

    if "certificate verify failed" in causes or any(
        isinstance(e, ssl.SSLCertVerificationError) for e in chain
    ):
        detail = scrub(str(chain[-1]), ctx)
        return UntrustedServer(
            f"could not talk to {ctx.base_url}: its TLS certificate could not be verified "
            f"({detail}); check the URL, or point SSL_CERT_FILE at the certificate authority "
            "that signed it"
        )
    if "incomplete" in causes or "peer closed" in causes or "disconnect" in causes:
        return Transport(f"the connection to {ctx.base_url} was cut before the reply was complete")
    detail = scrub(str(chain[-1]) or type(chain[-1]).__name__, ctx)
    return Transport(f"could not talk to {ctx.base_url}: {detail}")


# How HTTP libraries refuse a header they cannot send, quoting it: h11's "Illegal header
# value b'Bearer KEY\\n'", and "invalid header name/value" elsewhere.
_HEADER_REFUSED = re.compile(r"(illegal|invalid) header|header (value|name|field)", re.IGNORECASE)
_KEY_HEADERS = frozenset({"authorization", "x-api-key", "api-key"})


def quotes_a_header(exc: BaseException) -> bool:
    """True when `exc` (or what caused it) is a refusal to send a header, whose text
    quotes the header's value: the key, for the one that carries it."""
    import httpx2

    return any(
        isinstance(e, httpx2.LocalProtocolError | ValueError) and _HEADER_REFUSED.search(str(e))
        for e in _chain(exc)
    )


def unsendable_header(
    ctx: ErrorContext, header: str | None = None, problem: str = ""
) -> BadRequest:
    """A header (`header`, when known) HTTP cannot carry, named without its value. Sent
    again it fails again: not retried. The key is blamed by its variable when it holds
    what no key does (whitespace, a control or a non-ASCII character)."""
    from lathe.config.resolve import unsendable

    problem = problem or "holds a character HTTP does not allow in a header"
    key = ctx.api_key
    if (header or "").lower() in _KEY_HEADERS or (
        header is None and key not in ("", NO_KEY) and unsendable(key, spaces=True)
    ):
        what = f"the API key in {ctx.api_key_env}"
        fix = f"set {ctx.api_key_env} to the key alone"
    else:
        what = f"the header {header}" if header else "a header of the request"
        fix = "check the provider's headers setting and the variables it uses"
    return BadRequest(f"could not send a request to {ctx.base_url}: {what} {problem}; {fix}")


def _chain(exc: BaseException) -> list[BaseException]:
    chain = [exc]
    while (nxt := chain[-1].__cause__ or chain[-1].__context__) is not None and len(chain) < 8:
        chain.append(nxt)
    return chain


def scrub(text: str, ctx: ErrorContext) -> str:
    """`text` with the key masked, however it spells it (`secret_spellings`)."""
    if ctx.api_key and len(ctx.api_key.strip()) >= 4:
        for spelling in secret_spellings(ctx.api_key):
            if len(spelling) >= 4:
                text = text.replace(spelling, "[redacted]")
    return text
