"""lathe's exceptions, one tree. SDK and OS exceptions are converted where they enter.

    LatheError
    ├── UsageError            bad flags, config or input the user can fix (exit 2)
    ├── ProviderError         the model endpoint failed (exit 3 once retries are spent)
    │   ├── RateLimited       429; retryable, may carry retry_after seconds
    │   ├── Overloaded        5xx / 529; retryable, may carry retry_after seconds
    │   ├── Transport         connection refused, timeout, stream cut; retryable
    │   │   └── NothingListening  a loopback address refused the connection: retried
    │   │                         once, briefly, not with the usual backoff
    │   ├── ContextTooLong    the prompt exceeds the window; compaction's job, not retry's
    │   ├── AuthError         401/403; fatal, the message names the variable to fix
    │   └── BadRequest        400 and other refusals; fatal
    └── ToolError             a tool could not do what was asked; becomes an error
                              result the model sees, never aborts the run
"""

from __future__ import annotations


class LatheError(Exception):
    """Base of every error lathe raises on purpose."""


class UsageError(LatheError):
    """The user asked for something impossible; the message says what to change."""


class ProviderError(LatheError):
    retryable = False

    def __init__(self, message: str, *, retry_after: float | None = None) -> None:
        super().__init__(message)
        self.retry_after = retry_after


class RateLimited(ProviderError):
    retryable = True


class Overloaded(ProviderError):
    retryable = True


class Transport(ProviderError):
    retryable = True


class NothingListening(Transport):
    """Connection refused by this machine (127.0.0.1, ::1, localhost): the kernel's own
    certain answer that no server is bound there, so waiting long will not help. The
    message names the URL and says to start the server or fix the URL."""


class ContextTooLong(ProviderError):
    pass


class AuthError(ProviderError):
    pass


class BadRequest(ProviderError):
    pass


class ToolError(LatheError):
    """Raised inside a tool; the loop turns it into an error result for the model."""
