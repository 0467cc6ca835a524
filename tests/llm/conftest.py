from __future__ import annotations

from collections.abc import AsyncIterator

import pytest
from tests.fakes.openai_server import FakeOpenAIServer
from tests.llm.provider_support import QUICK, SECRET

from lathe.llm.openai_chat import OpenAIChatProvider


@pytest.fixture
async def provider(fake_openai: FakeOpenAIServer) -> AsyncIterator[OpenAIChatProvider]:
    """A provider pointed at the fake server, with a short timeout."""
    p = OpenAIChatProvider("fake-model", fake_openai.base_url, SECRET, timeouts=QUICK)
    yield p
    await p.aclose()
