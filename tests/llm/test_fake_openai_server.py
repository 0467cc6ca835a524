"""The fake server's own behaviour that later tests rely on."""

from __future__ import annotations

import time

import httpx
from tests.fakes.openai_server import Call, FakeOpenAIServer, Reply, server_error


def test_lists_models_and_records_requests():
    with FakeOpenAIServer(models=["a", "b"]) as server:
        response = httpx.get(f"{server.base_url}/models", headers={"X-Probe": "1"})

        assert response.json()["data"] == [
            {"id": "a", "object": "model", "owned_by": "fake"},
            {"id": "b", "object": "model", "owned_by": "fake"},
        ]
        [recorded] = server.requests
        assert (recorded.method, recorded.path, recorded.body) == ("GET", "/v1/models", None)
        assert recorded.headers["x-probe"] == "1"


def test_responder_answers_once_the_queue_is_empty(fake_openai):
    seen = []

    def respond(body):
        seen.append(body["messages"][-1]["content"])
        return Reply(f"echo: {body['messages'][-1]['content']}", stream=False)

    fake_openai.enqueue(server_error(503))
    fake_openai.responder = respond
    url = f"{fake_openai.base_url}/chat/completions"

    first = httpx.post(url, json={"model": "m", "messages": [{"role": "user", "content": "1"}]})
    second = httpx.post(url, json={"model": "m", "messages": [{"role": "user", "content": "2"}]})

    assert first.status_code == 503
    assert second.json()["choices"][0]["message"]["content"] == "echo: 2"
    assert seen == ["2"]


def test_streams_sse_ending_with_done(fake_openai):
    fake_openai.enqueue(Reply("hi", calls=[Call("ls", "{}")], usage_when="always"))

    response = httpx.post(
        f"{fake_openai.base_url}/chat/completions", json={"model": "m", "stream": True}
    )

    assert response.headers["content-type"] == "text/event-stream"
    events = [line[6:] for line in response.text.splitlines() if line.startswith("data: ")]
    assert events[-1] == "[DONE]"
    assert '"usage"' in events[-2]
    assert '"finish_reason": "tool_calls"' in events[-3]


def test_a_paced_reply_stalls_and_trickles_where_scripted(fake_openai):
    fake_openai.enqueue(Reply("abc", text_chunk=1, stall_after=2, stall_s=0.6, trickle_s=0.1))
    arrivals: list[float] = []

    sent = time.monotonic()
    with httpx.stream(
        "POST", f"{fake_openai.base_url}/chat/completions", json={"model": "m", "stream": True}
    ) as response:
        for line in response.iter_lines():
            if line.startswith("data: "):
                arrivals.append(time.monotonic() - sent)

    # Chunk n cannot leave before n trickles, plus the stall from chunk 2 on. Bounds from
    # the request, not between chunks: a chunk read late makes the gap after it short.
    earliest = [0.1 * n + (0.6 if n >= 2 else 0.0) for n in range(len(arrivals))]
    assert len(arrivals) > 3
    assert all(at >= bound - 0.01 for at, bound in zip(arrivals, earliest, strict=True))
