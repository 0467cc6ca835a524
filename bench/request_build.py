"""What one model request costs lathe as the conversation grows, on the real provider.

An OpenAI-compatible provider sends a conversation of N turns (an assistant reply with a
tool call and its result each) to the fake server (tests/fakes/openai_server.py) over
real HTTP, a turn longer each request, as a run does; the figure is the median time from
asking for the stream to its last event, which includes building the body, the SDK, the
HTTP round trip and the fake server reading the body (it shares this process).

Usage: python bench/request_build.py [--turns N ...] [--requests K]
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from tests.fakes.openai_server import FakeOpenAIServer, Reply  # noqa: E402

from lathe.agent.request_view import RequestView  # noqa: E402
from lathe.llm.base import ModelRequest  # noqa: E402
from lathe.llm.openai_chat import OpenAIChatProvider  # noqa: E402
from lathe.types import AssistantMessage, ToolCall, ToolResultMessage, UserMessage  # noqa: E402


def _turn(i: int) -> list:
    call = ToolCall(id=f"c{i}", name="bash", arguments=f'{{"command": "pytest -k case{i}"}}')
    output = f"case{i} passed\n" + "." * 200
    return [
        AssistantMessage(text=f"step {i}", tool_calls=(call,)),
        ToolResultMessage(tool_call_id=call.id, name="bash", content=output),
    ]


async def _measure(server: FakeOpenAIServer, turns: int, requests: int) -> float:
    provider = OpenAIChatProvider("fake-model", server.base_url, "")
    history = [UserMessage(content="fix the failing test")]
    for i in range(turns):
        history += _turn(i)
    view = RequestView()
    times = []
    try:
        for i in range(requests):
            history += _turn(turns + i)
            request = ModelRequest(system="bench", messages=view.update(history, None), tools=[])
            server.enqueue(Reply("ok"))
            started = time.perf_counter()
            async for _ in provider.stream(request):
                pass
            times.append(time.perf_counter() - started)
    finally:
        await provider.aclose()
    return statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--turns", type=int, nargs="+", default=[10, 100, 1000, 3000])
    parser.add_argument("--requests", type=int, default=7)
    options = parser.parse_args()
    with FakeOpenAIServer() as server:
        for turns in options.turns:
            median = asyncio.run(_measure(server, turns, options.requests))
            print(f"turns: {turns:>5}  one request: {median * 1000:8.1f} ms (median)")


if __name__ == "__main__":
    main()
