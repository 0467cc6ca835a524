"""An SDK client built at its first use, from whichever thread asks first.

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
