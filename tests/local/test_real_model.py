"""End to end against the real local model and llama-server. They need
`lathe local install` to have run and take a minute; skipped otherwise."""

from __future__ import annotations

import json
import urllib.request

import pytest

from lathe.local import ensure_local_server, is_installed, managed_server

pytestmark = [
    pytest.mark.local_model,
    pytest.mark.timeout(600),
    pytest.mark.skipif(not is_installed("1.5b"), reason="local 1.5b model not installed"),
]

TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "read",
            "description": "Read a file of the workspace, with line numbers.",
            "parameters": {
                "type": "object",
                "properties": {"path": {"type": "string"}},
                "required": ["path"],
            },
        },
    }
]


def chat(base_url: str, model: str, messages: list[dict]) -> dict:
    body = json.dumps(
        {"model": model, "messages": messages, "tools": TOOLS, "temperature": 0, "max_tokens": 200}
    ).encode()
    request = urllib.request.Request(
        f"{base_url}/chat/completions", data=body, headers={"Content-Type": "application/json"}
    )
    with urllib.request.urlopen(request, timeout=300) as resp:
        return json.loads(resp.read())["choices"][0]["message"]


def test_the_model_calls_a_tool_through_lathes_template() -> None:
    endpoint = ensure_local_server("local/1.5b")
    try:
        message = chat(
            endpoint.base_url,
            endpoint.model,
            [
                {"role": "system", "content": "You are a coding agent. Use the tools."},
                {"role": "user", "content": "Show me what is in calc.py."},
            ],
        )
        calls = message.get("tool_calls") or []
        assert [c["function"]["name"] for c in calls] == ["read"], message
        assert json.loads(calls[0]["function"]["arguments"])["path"].endswith("calc.py")
    finally:
        server = managed_server("1.5b")
        if server is not None:
            server.stop()
