"""A URL as it may be shown (`secrets.masked_url`): its credentials masked by where they
stand, never by finding their text elsewhere in it."""

from __future__ import annotations

import pytest

from lathe.config.secrets import masked_url


@pytest.mark.parametrize(
    ("url", "shown"),
    [
        # A one-letter password: the "p" of "https" had been masked too.
        ("https://u:p@h/v1", "https://…@h/v1"),  # user and password, whole
        ("http://bob:h@host:8080/v1", "http://…@host:8080/v1"),
        ("https://h/v1?page=2&api%5Fkey=v1#top", "https://h/v1?page=2&api%5Fkey=…#top"),
        ("https://h/v1?api_key=v1", "https://h/v1?api_key=…"),
        ("https://h/mcp/sk-ak-abcdef0123456789abcdef/sse", "https://h/mcp/sk-…cdef/sse"),
        ("https://h/v1", "https://h/v1"),
    ],
)
def test_each_credential_is_masked_where_it_stands(url, shown):
    assert masked_url(url) == shown
