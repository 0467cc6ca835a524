"""Facts about network addresses that more than one layer needs: config (a local server
needs no API key) and the providers (nothing listening there is a certain answer)."""

from __future__ import annotations


def is_loopback(url: str | None) -> bool:
    """Whether `url` points at this machine: localhost, ::1 or any 127.x address."""
    from urllib.parse import urlparse

    host = urlparse(url or "").hostname or ""
    return host in {"localhost", "::1"} or host.startswith("127.")
