"""`http_stream.sniffed`: a body that starts as server-sent events do is a stream whatever
its content type says, and the response given back still holds the whole body."""

from __future__ import annotations

import httpx2
import pytest

from lathe.llm.http_stream import is_event_stream, sniffed


def _response(content_type: str | None, chunks: list[bytes]) -> httpx2.Response:
    async def body():
        for chunk in chunks:
            yield chunk

    headers = {"content-type": content_type} if content_type else {}
    request = httpx2.Request("POST", "http://model.test/v1/chat/completions")
    return httpx2.Response(200, headers=headers, content=body(), request=request)


@pytest.mark.parametrize(
    "chunks",
    [
        [b": keep-alive\n\n", b'data: {"a": 1}\n\n'],
        [b"\n  ", b"i", b"d: 1\ndata: {}\n\n"],
        [b"event: message_start\ndata: {}\n\n"],
        [b"da", b"ta: {}\n\n"],
    ],
    ids=["comment", "id-after-whitespace-in-pieces", "event", "data-in-pieces"],
)
@pytest.mark.parametrize("content_type", [None, "text/plain", "application/octet-stream"])
async def test_a_body_starting_as_events_is_a_stream(chunks, content_type) -> None:
    response = await sniffed(_response(content_type, chunks))

    assert is_event_stream(response)
    assert await response.aread() == b"".join(chunks)


async def test_anything_else_keeps_its_content_type_and_whole_body() -> None:
    chunks = [b"<html>", b"<body>log in</body></html>"]

    response = await sniffed(_response("text/html", chunks))

    assert not is_event_stream(response)
    assert response.headers["content-type"] == "text/html"
    assert await response.aread() == b"".join(chunks)
