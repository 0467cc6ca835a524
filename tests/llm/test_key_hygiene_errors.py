"""The provider's error boundary, for a key or header HTTP cannot carry.

Reproduced on landed main: a key holding a non-breaking space raised UnicodeEncodeError
from building the HTTP client, outside the error mapping (a traceback, exit 1); one
holding a line break was `could not talk to URL: Illegal header value b'Bearer KEY\\n'`,
retried five times with the key in every line. `lathe.ui.setup` now refuses such a key
before a run starts; these are the boundary's own guarantees, for whatever gets past.
"""

from __future__ import annotations

from dataclasses import replace

import httpx2
from tests.llm.provider_support import QUICK, failure

from lathe.errors import BadRequest
from lathe.llm.errors_map import ErrorContext, scrub, to_provider_error
from lathe.llm.openai_chat import OpenAIChatProvider

KEY = "f3a9c1d2e4b5a6978877665544332211"
CTX = ErrorContext("m", "http://127.0.0.1:9/v1", "OPENAI_API_KEY", KEY + "\n", QUICK)


async def test_a_key_http_cannot_encode_is_a_bad_request_not_a_crash(fake_openai):
    key = f"sk-abc\u00a0{KEY}"
    provider = OpenAIChatProvider("m", fake_openai.base_url, key, timeouts=QUICK)
    try:
        error = await failure(provider)
    finally:
        await provider.aclose()

    assert type(error) is BadRequest and not error.retryable
    assert KEY not in str(error)
    assert "OPENAI_API_KEY" in str(error)
    assert fake_openai.requests == []


async def test_a_key_holding_a_line_break_is_a_bad_request_that_does_not_quote_it(fake_openai):
    provider = OpenAIChatProvider("m", fake_openai.base_url, f"{KEY}\nx", timeouts=QUICK)
    try:
        error = await failure(provider)
    finally:
        await provider.aclose()

    assert type(error) is BadRequest and not error.retryable
    assert KEY not in str(error) and "Bearer" not in str(error)
    assert fake_openai.requests == []


def test_an_illegal_header_value_is_never_quoted():
    exc = httpx2.LocalProtocolError(f"Illegal header value b'Bearer {KEY}\\n'")

    error = to_provider_error(exc, replace(CTX, api_key="unrelated-key-123456"))

    assert type(error) is BadRequest
    assert KEY not in str(error) and "Bearer" not in str(error)
    assert "header" in str(error)


def test_scrub_masks_the_escaped_spellings_of_the_key():
    for shown in (f"b'Bearer {KEY}\\n'", f"'{KEY}\\n'", f'"{KEY}\\n"', KEY):
        assert KEY not in scrub(f"could not: {shown}", CTX), shown
    odd = replace(CTX, api_key=f"sk-abc\u00a0{KEY}")
    for shown in ("\\xa0", "\\xc2\\xa0", "\\u00a0", "\u00a0"):
        assert KEY not in scrub(f"could not: sk-abc{shown}{KEY}", odd), shown
