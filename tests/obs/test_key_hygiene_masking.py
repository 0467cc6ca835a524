"""The masker hides a secret however a message spells it.

Reproduced on landed main: a key ending in a newline was printed in clear in every
retry line, the --json events and the session files, as httpx quoted it
(`b'Bearer f3a9...\\n'`): `Redactor.mask` replaced the exact value only, and the escaped
form did not match it (a key of a vendor's shape happened to be masked by its shape).
"""

from __future__ import annotations

import pytest

from lathe.events import RunFinished
from lathe.obs.redact import Redactor
from lathe.types import Usage

KEY = "f3a9c1d2e4b5a6978877665544332211"


@pytest.mark.parametrize(
    ("secret", "text"),
    [
        (KEY + "\n", f"Illegal header value b'Bearer {KEY}\\n'"),
        (KEY + "\n", f"repr: '{KEY}\\n'"),
        (" " + KEY + " ", f'json: "{KEY} "'),
        (f"sk-abc\u00a0{KEY}", f"bytes: b'sk-abc\\xc2\\xa0{KEY}'"),
        (f"sk-abc\u00a0{KEY}", f"repr: 'sk-abc\\xa0{KEY}'"),
        (f"sk-abc\u00a0{KEY}", f'json: "sk-abc\\u00a0{KEY}"'),
        (f"{KEY}\nsecond-line", f"b'Bearer {KEY}\\nsecond-line'"),
    ],
)
def test_escaped_spellings_of_a_secret_are_masked(secret, text):
    redactor = Redactor([secret])

    masked = redactor.mask(text)

    assert KEY not in masked
    assert redactor.found_in(text)


def test_an_event_quoting_the_escaped_key_is_masked():
    redactor = Redactor([KEY + "\n"])
    event = RunFinished(
        status="provider_error", turns=1, usage=Usage(), answer="",
        reason=f"could not talk: Illegal header value b'Bearer {KEY}\\n'",
    )  # fmt: skip

    assert KEY not in redactor.event(event).model_dump_json()
