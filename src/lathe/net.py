"""Facts about network addresses that more than one layer needs: config (a local server
needs no API key) and the providers (nothing listening there is a certain answer)."""

from __future__ import annotations


def is_loopback(url: str | None) -> bool:
    """Whether `url` points at this machine: `localhost`, or a loopback address written
    as one (127.x, ::1). Any other name may resolve anywhere: `127.attacker.example`
    is not this machine."""
    from urllib.parse import urlparse

    host = urlparse(url or "").hostname or ""
    return host == "localhost" or is_loopback_address(host)


def is_loopback_address(host: str) -> bool:
    """Whether `host` is a loopback address written as one (127.x, ::1, ::ffff:127.x);
    False for a name."""
    import ipaddress

    try:
        address = ipaddress.ip_address(host)
    except ValueError:
        return False
    mapped = getattr(address, "ipv4_mapped", None)
    return address.is_loopback or bool(mapped and mapped.is_loopback)
