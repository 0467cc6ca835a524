"""A served session driven in-process on a real event loop (real provider over HTTP
to the fake model, real session files): what races on the loop must not lose."""

from __future__ import annotations

import asyncio

import pytest
from tests.fakes.openai_server import Hang, Reply
from tests.service.scripts import workspace_for

from lathe.events import Notice
from lathe.service.limits import ServerLimits
from lathe.service.live import SessionOptions
from lathe.service.manager import SessionManager


@pytest.fixture
def manager(tmp_path, monkeypatch):
    monkeypatch.setenv("LATHE_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    return SessionManager(tmp_path / "home", ServerLimits(2, 8))


async def _served(manager, tmp_path, fake):
    options = SessionOptions(
        workspace=str(workspace_for(tmp_path, "ws")), model="m", base_url=fake.base_url
    )
    return await manager.create(options)


async def test_a_reader_too_far_behind_catches_up_and_goes_on_following(
    manager, tmp_path, fake_openai
):
    # A burst of events ended every reader that fell 10,000 behind.
    served = await _served(manager, tmp_path, fake_openai)
    try:
        reader = served.events(0)
        waiting = asyncio.ensure_future(anext(reader))
        await asyncio.sleep(0.05)  # it has replayed nothing and waits for live events
        served.emit(Notice(level="info", message="first"))
        first = await waiting  # one live event read; now it stops reading
        for n in range(10_050):
            served.emit(Notice(level="info", message=f"n{n}"))
        got = [first[0]] + [(await anext(reader))[0] for _ in range(10_050)]
        assert got == list(range(1, 10_052))
        following = asyncio.ensure_future(anext(reader))
        await asyncio.sleep(0.05)
        served.emit(Notice(level="info", message="after the burst"))
        assert (await following)[0] == 10_052
    finally:
        await manager.close()


async def test_a_message_sent_while_a_run_is_aborted_runs_after_it(manager, tmp_path, fake_openai):
    fake_openai.enqueue(Hang(30), Reply("second answer"))
    served = await _served(manager, tmp_path, fake_openai)
    try:
        served.post("first task")
        while not fake_openai.requests:
            await asyncio.sleep(0.05)
        aborting = asyncio.create_task(served.abort())
        await asyncio.sleep(0)
        assert served.post("second task") is True  # queued behind the stopping run
        assert await aborting is True
        while (
            served.running or served.last_run is None or served.last_run["status"] != "unverified"
        ):
            await asyncio.sleep(0.05)
        bodies = fake_openai.chat_bodies()
        assert "second task" in str(bodies[-1]["messages"])
    finally:
        await manager.close()
