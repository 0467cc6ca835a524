"""`lathe run` against a server (or a proxy in front of it) that streams server-sent events
with no content type, `text/plain` or `application/octet-stream`: the body starts as a
stream does (`data:`, `event:`, `id:`, or a `:` comment), so it is read as one. It had
been refused as "not a model's reply" (a BadRequest, not retried) once a reply had to
say `text/event-stream` to be read as a stream."""

from __future__ import annotations

import json
import subprocess

import pytest
from tests.e2e.test_not_a_model_reply import _lathe
from tests.fakes import anthropic_server as claude
from tests.fakes.anthropic_server import FakeAnthropicServer
from tests.fakes.openai_server import FakeOpenAIServer, Reply

TYPES = [None, "text/plain", "application/octet-stream", "text/html"]
IDS = ["none", "text-plain", "octet-stream", "text-html"]


def _answer(result: subprocess.CompletedProcess) -> str:
    events = [json.loads(line) for line in result.stdout.splitlines()]
    assert events and events[-1]["type"] == "run_finished", result.stderr
    assert result.returncode == 0, events[-1]
    return events[-1]["answer"]


@pytest.mark.parametrize("content_type", TYPES, ids=IDS)
def test_openai_stream_of_another_content_type_is_read(tmp_path, content_type):
    with FakeOpenAIServer() as server:
        server.enqueue(Reply("Streamed all the same.", content_type=content_type))
        result = _lathe(tmp_path, server.base_url)
        assert len(server.chat_bodies()) == 1
    assert _answer(result) == "Streamed all the same."


@pytest.mark.parametrize("content_type", TYPES, ids=IDS)
def test_anthropic_stream_of_another_content_type_is_read(tmp_path, content_type):
    with FakeAnthropicServer() as server:
        server.enqueue(claude.Reply("Streamed all the same.", content_type=content_type))
        result = _lathe(tmp_path, server.base_url, "-c", "models.m.provider=anthropic")
        assert len(server.message_bodies()) == 1
    assert _answer(result) == "Streamed all the same."
