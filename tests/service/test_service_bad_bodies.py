"""A request body lathe cannot read as JSON is a 422 that says why, whatever the
reason: FastAPI answered some with its generic 400 "There was an error parsing the
body"."""

from __future__ import annotations

import httpx
from tests.service.scripts import calc_workspace


def test_a_body_not_in_utf_8_or_nested_too_deeply_is_a_422_naming_why(served, tmp_path):
    headers = {"Authorization": f"Bearer {served.token}", "Content-Type": "application/json"}
    made = httpx.post(
        served.url + "/v1/sessions", json={"workspace": str(calc_workspace(tmp_path))},
        headers=headers,
    )  # fmt: skip
    messages = f"{served.url}/v1/sessions/{made.json()['id']}/messages"
    latin = httpx.post(messages, content='{"text": "café"}'.encode("latin-1"), headers=headers)
    deep = httpx.post(messages, content=b"[" * 100_000, headers=headers)
    assert (latin.status_code, deep.status_code) == (422, 422), (latin.text, deep.text)
    assert latin.json()["error"].startswith("bad request: the body is not UTF-8")
    assert deep.json()["error"].startswith("bad request: the body's JSON is nested too deeply")
