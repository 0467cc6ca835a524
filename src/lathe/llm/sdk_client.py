"""An SDK client built at its first use, from whichever thread asks first, with the
options both SDK providers give it.

Both SDK providers build their client lazily (importing the SDK costs most of a second)
and may be asked for it by their warm-up thread and by the first request at once.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any


class LazyClient:
    """`get()` builds the client once with `build` (a caller arriving meanwhile waits for
    that build instead of starting another); `close()` closes the one built, if any, and
    the next `get()` builds a new one."""

    def __init__(self, build: Callable[[], Any]) -> None:
        self._build = build
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
            await client.close()


def client_options(
    api_key: str | None, base_url: str, timeouts: Any, headers: dict[str, str]
) -> dict[str, Any]:
    """What both SDK clients are built with: the SDK's own retries off (lathe's retry
    policy is the one), `timeouts` (an `llm.timeouts` value) as httpx timeouts, and a
    placeholder key when none is set: the SDK would otherwise go looking in the
    environment and profile files, and the server's 401 then says what to set."""
    return {
        "api_key": api_key or "no-key-set",
        "base_url": base_url,
        "timeout": timeouts.for_httpx(),
        "max_retries": 0,
        "default_headers": headers or None,
    }
