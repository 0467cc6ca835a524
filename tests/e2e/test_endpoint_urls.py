"""The URLs lathe sends its requests to, read from the fake server's record, for base
URLs a plain concatenation gets wrong: a query string (`?api-version=...`, as Azure-style
endpoints want) went before the path (`/v1?api-version=2024-06-01/chat/completions`)."""

from __future__ import annotations

import base64
import os
import subprocess
import sys
from pathlib import Path

from tests.fakes.anthropic_server import Reply as ClaudeReply
from tests.fakes.openai_server import Reply

QUERY = "api-version=2024-06-01"


def _lathe(tmp_path: Path, *args: str, env: dict[str, str]) -> subprocess.CompletedProcess:
    ws = tmp_path / "ws"
    ws.mkdir(exist_ok=True)
    clean = {k: v for k, v in os.environ.items() if not k.startswith(("LATHE_", "OPENAI_"))}
    clean = {k: v for k, v in clean.items() if not k.startswith("ANTHROPIC_")}
    clean.update({"LATHE_HOME": str(tmp_path / "home"), "NO_COLOR": "1", **env})
    return subprocess.run(
        [sys.executable, "-m", "lathe", *args, "-C", str(ws)], cwd=tmp_path, env=clean,
        capture_output=True, text=True, timeout=120, stdin=subprocess.DEVNULL,
    )  # fmt: skip


def test_a_query_in_the_base_url_stays_after_the_chat_path(tmp_path, fake_openai):
    fake_openai.enqueue(Reply("Nothing to do."))

    result = _lathe(
        tmp_path, "run", "--model", "m", "--base-url", f"{fake_openai.base_url}?{QUERY}",
        "say hi", env={"OPENAI_API_KEY": "sk-test"},
    )  # fmt: skip

    assert result.returncode == 0, result.stderr
    assert [r.path for r in fake_openai.requests] == [f"/v1/chat/completions?{QUERY}"]


def test_doctor_lists_and_asks_the_model_at_a_base_url_with_a_query(tmp_path, fake_openai):
    fake_openai.enqueue(Reply("OK"))

    result = _lathe(
        tmp_path, "doctor", "--model", "fake-model", "--base-url",
        f"{fake_openai.base_url}/?{QUERY}", "--live", env={"OPENAI_API_KEY": "sk-test"},
    )  # fmt: skip

    assert [(r.method, r.path) for r in fake_openai.requests] == [
        ("GET", f"/v1/models?{QUERY}"),
        ("POST", f"/v1/chat/completions?{QUERY}"),
    ], result.stdout


def test_a_query_in_an_anthropic_base_url_stays_after_the_messages_path(tmp_path, fake_anthropic):
    fake_anthropic.enqueue(ClaudeReply("Nothing to do."))
    url = f"{fake_anthropic.base_url}/v1?{QUERY}"

    result = _lathe(
        tmp_path, "run", "--model", "anthropic/fake-claude",
        "-c", f"providers.anthropic.base_url={url}", "say hi",
        env={"ANTHROPIC_API_KEY": "sk-ant-test"},
    )  # fmt: skip

    assert result.returncode == 0, result.stderr
    assert [r.path for r in fake_anthropic.requests] == [f"/v1/messages?{QUERY}"]


def test_a_base_url_with_user_and_password_keeps_the_api_key_as_bearer(tmp_path, fake_openai):
    # The URL's credentials went as Basic auth in place of the key, which was dropped.
    fake_openai.enqueue(Reply("Nothing to do."), Reply("Nothing to do."))
    url = fake_openai.base_url.replace("http://", "http://alice:pw-0123456789abcdef@")

    with_key = _lathe(
        tmp_path, "run", "--model", "m", "--base-url", url, "say hi",
        env={"OPENAI_API_KEY": "sk-test"},
    )  # fmt: skip
    without_key = _lathe(tmp_path, "run", "--model", "m", "--base-url", url, "say hi", env={})

    for result in (with_key, without_key):
        assert result.returncode == 0, result.stderr
        assert "pw-0123456789abcdef" not in result.stdout + result.stderr
    basic = "Basic " + base64.b64encode(b"alice:pw-0123456789abcdef").decode()
    assert [r.headers.get("authorization") for r in fake_openai.requests] == [
        "Bearer sk-test",
        basic,
    ]
