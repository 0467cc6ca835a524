"""Requests about one session that meet on the server's loop: each is answered as the
API says, however they interleave (driven in-process through the app, real sessions)."""

from __future__ import annotations

import asyncio

import httpx
from tests.service.scripts import workspace_for

from lathe.service.app import create_app
from lathe.service.limits import ServerLimits
from lathe.service.manager import SessionManager


async def test_a_delete_or_fork_of_a_session_gone_meanwhile_is_a_json_404(
    tmp_path, monkeypatch, fake_openai
):
    # Both checked the session before waiting their turn, and the one that found it
    # gone answered a plain-text 500 (UnknownSession, with a traceback on stderr).
    monkeypatch.setenv("LATHE_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    manager = SessionManager(tmp_path / "home", ServerLimits(1, 8))
    app = create_app(manager, "token")
    async with httpx.AsyncClient(
        transport=httpx.ASGITransport(app, raise_app_exceptions=False),
        base_url="http://lathe",
        headers={"Authorization": "Bearer token"},
    ) as client:
        ws = workspace_for(tmp_path, "raced")
        made = await client.post(
            "/v1/sessions",
            json={"workspace": str(ws), "model": "m", "base_url": fake_openai.base_url},
        )
        session = f"/v1/sessions/{made.json()['id']}"
        try:
            async with manager._lock:  # as a create or fork under way holds it
                calls = [
                    asyncio.create_task(client.delete(session)),
                    asyncio.create_task(client.delete(session)),
                    asyncio.create_task(client.post(f"{session}/fork")),
                ]
                await asyncio.sleep(0.2)  # each has found the session and waits
            answers = await asyncio.gather(*calls)
        finally:
            await manager.close()
    assert [a.status_code for a in answers] == [200, 404, 404], [a.text for a in answers]
    for gone in answers[1:]:
        assert gone.json() == {
            "error": f"no session {made.json()['id']} is served here; list them with "
            "GET /v1/sessions"
        }
