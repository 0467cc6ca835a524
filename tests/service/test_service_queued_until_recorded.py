"""A queued message's file (`<ts>_<id>.queued`) goes only once the message is in the
session: a run refused before it recorded its task keeps it, and a restart that finds
the file and the message both (a crash between writing one and removing the other)
delivers it once."""

from __future__ import annotations

import asyncio
import contextlib
import json
from pathlib import Path

import pytest
from tests.fakes.openai_server import Reply
from tests.service.scripts import workspace_for

from lathe.service.limits import ServerLimits
from lathe.service.live import QUEUE_SUFFIX, SessionOptions
from lathe.service.manager import SessionManager
from lathe.types import UserMessage


@pytest.fixture
def home(tmp_path, monkeypatch):
    monkeypatch.setenv("LATHE_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    return tmp_path / "home"


async def _served(manager, tmp_path, fake):
    options = SessionOptions(
        workspace=str(workspace_for(tmp_path, "ws")), model="m", base_url=fake.base_url
    )
    return await manager.create(options)


async def _settled(served):
    while served.running:
        await asyncio.sleep(0.02)


def _users(served) -> list[str]:
    return [m.content for m in served.agent.messages if isinstance(m, UserMessage)]


async def test_a_queued_message_a_busy_workspace_refused_stays_queued(
    home, tmp_path, fake_openai, monkeypatch
):
    # The file went as the run began, before the refusal: the text was on disk nowhere,
    # and the person was told to send it again.
    from lathe import workspace_lock

    @contextlib.contextmanager
    def busy(workspace, *, doing, when_busy, **_):
        raise workspace_lock.WorkspaceBusy(f"another run holds {workspace}; {when_busy}")
        yield

    fake_openai.responder = lambda body: Reply("done")
    manager = SessionManager(home, ServerLimits(2, 8))
    try:
        served = await _served(manager, tmp_path, fake_openai)
        queue = Path(served.session.path).with_suffix(QUEUE_SUFFIX)
        monkeypatch.setattr(workspace_lock, "hold_workspace", busy)
        assert served.post("first task") is False
        assert served.post("IMPORTANT queued words") is True  # behind the first
        await _settled(served)
        assert json.loads(queue.read_bytes()) == ["IMPORTANT queued words"]
        assert served.summary()["queued_messages"] == 1
        monkeypatch.undo()
        assert served.post("go on") is False  # the workspace is free: it runs, with them
        await _settled(served)
        assert served.last_run["status"] == "unverified", served.last_run
        assert _users(served)[-1] == "IMPORTANT queued words\n\ngo on"
        assert not queue.exists()
        assert served.summary()["queued_messages"] == 0
    finally:
        await manager.close()


@pytest.mark.parametrize(
    "queued",
    [["fix the build"], ["fix the build", "and add a test"]],
    ids=["the run's task", "kept at a stop"],
)
async def test_a_queued_message_already_in_the_session_is_delivered_once(
    home, tmp_path, fake_openai, queued
):
    # kill -9 after the message was recorded and before its file went: the restart put
    # it in the conversation a second time, with a notice that it had not run.
    fake_openai.responder = lambda body: Reply("done")
    manager = SessionManager(home, ServerLimits(2, 8))
    try:
        served = await _served(manager, tmp_path, fake_openai)
        served.post("\n\n".join(queued))
        await _settled(served)
        session_id, path = served.id, Path(served.session.path)
    finally:
        await manager.close()
    path.with_suffix(QUEUE_SUFFIX).write_text(json.dumps(queued))

    again = SessionManager(home, ServerLimits(2, 8))
    try:
        await again.restore()
        assert again.problems == []
        served = again.get(session_id)
        assert _users(served) == ["\n\n".join(queued)]
        assert "queued message" not in served.journal.path.read_text()
        assert not path.with_suffix(QUEUE_SUFFIX).exists()
    finally:
        await again.close()


async def test_a_queued_message_equal_to_an_earlier_one_only_is_kept(home, tmp_path, fake_openai):
    # Only the session's last user message stands for a delivered queue.
    fake_openai.responder = lambda body: Reply("done")
    manager = SessionManager(home, ServerLimits(2, 8))
    try:
        served = await _served(manager, tmp_path, fake_openai)
        for text in ("yes", "something else"):
            served.post(text)
            await _settled(served)
        session_id, path = served.id, Path(served.session.path)
    finally:
        await manager.close()
    path.with_suffix(QUEUE_SUFFIX).write_text(json.dumps(["yes"]))

    again = SessionManager(home, ServerLimits(2, 8))
    try:
        await again.restore()
        assert _users(again.get(session_id)) == ["yes", "something else", "yes"]
        assert not path.with_suffix(QUEUE_SUFFIX).exists()
    finally:
        await again.close()
