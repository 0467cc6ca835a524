"""lathe's exceptions, one tree. SDK and OS exceptions are converted where they enter.

LatheError
├── UsageError            bad flags, config or input the user can fix (exit 2)
├── ProviderError         the model endpoint failed (exit 3 once retries are spent)
│   ├── RateLimited       429; retryable, may carry retry_after seconds
│   ├── Overloaded        5xx / 529; retryable, may carry retry_after seconds
│   ├── Transport         connection refused, timeout, stream cut; retryable
│   │   ├── NothingListening  a loopback address refused the connection: retried
│   │   │                     once, briefly, not with the usual backoff
│   │   └── UntrustedServer   a TLS certificate that cannot be verified; fatal
│   ├── ContextTooLong    the prompt exceeds the window; compaction's job, not retry's
│   ├── AuthError         401/403; fatal, the message names the variable to fix
│   └── BadRequest        400 and other refusals, a quota used up; fatal
└── ToolError             a tool could not do what was asked; becomes an error
                          result the model sees, never aborts the run

Each ProviderError class names its `kind` for programs (`RunFinished.error`):
rate_limit, overloaded, transport (NothingListening and UntrustedServer too),
context_too_long, auth,
bad_request, and "provider" for any other.
"""

from __future__ import annotations

from typing import Any, Literal, Self

ErrorKind = Literal[
    "auth", "rate_limit", "overloaded", "transport", "context_too_long", "bad_request", "provider"
]


class LatheError(Exception):
    """Base of every error lathe raises on purpose."""


class UsageError(LatheError):
    """The user asked for something impossible; the message says what to change."""


class ProviderError(LatheError):
    """The model endpoint failed. Besides the message (written for the user, never
    holding the key) it keeps what a program needs to tell failures apart: `status`, the
    HTTP status the server answered (None without one: a connection that failed, an
    error inside a streamed reply); `request_id`, the provider's id of the request from
    its response headers, for its support; `retries`, how many times the request was
    retried before this error ended it (set by the retry policy)."""

    retryable = False
    kind: ErrorKind = "provider"

    def __init__(
        self,
        message: str,
        *,
        retry_after: float | None = None,
        status: int | None = None,
        request_id: str | None = None,
        retries: int = 0,
    ) -> None:
        super().__init__(message)
        self.retry_after = retry_after
        self.status = status
        self.request_id = request_id
        self.retries = retries

    def reworded(self, message: str, **changes: Any) -> Self:
        """The same error with another message; `changes` replace the other fields
        (retry_after, status, request_id, retries), the rest are kept."""
        return type(self)(message, **(self._fields() | changes))

    def _fields(self) -> dict[str, Any]:
        return {
            "retry_after": self.retry_after,
            "status": self.status,
            "request_id": self.request_id,
            "retries": self.retries,
        }


class RateLimited(ProviderError):
    retryable = True
    kind = "rate_limit"


class Overloaded(ProviderError):
    retryable = True
    kind = "overloaded"


class Transport(ProviderError):
    retryable = True
    kind = "transport"


class UntrustedServer(Transport):
    """The server's TLS certificate could not be verified: no retry can change that."""

    retryable = False


class NothingListening(Transport):
    """Connection refused by this machine (127.0.0.1, ::1, localhost): the kernel's own
    certain answer that no server is bound there, so waiting long will not help. The
    message names the URL and says to start the server or fix the URL."""


class ContextTooLong(ProviderError):
    """The server refused the request as too long for the model's window. The numbers
    it gave, where it gave them: `window_tokens` (the model's context length) and
    `request_tokens` (what it counted in this request's prompt, without the output
    room `max_tokens` asked for)."""

    kind = "context_too_long"

    def __init__(
        self,
        message: str,
        *,
        window_tokens: int | None = None,
        request_tokens: int | None = None,
        **fields: Any,
    ) -> None:
        super().__init__(message, **fields)
        self.window_tokens = window_tokens
        self.request_tokens = request_tokens

    def _fields(self) -> dict[str, Any]:
        sizes = {"window_tokens": self.window_tokens, "request_tokens": self.request_tokens}
        return super()._fields() | sizes


class AuthError(ProviderError):
    kind = "auth"


class BadRequest(ProviderError):
    kind = "bad_request"


class ToolError(LatheError):
    """Raised inside a tool; the loop turns it into an error result for the model."""


class ToolRefusal(ToolError):
    """A tool declining a kind of call this run does not allow (write replacing a file
    where write only creates): an error result, and a refused call for the stall rules,
    as if a rule had refused it, so asking again and again ends the run `stuck`."""
