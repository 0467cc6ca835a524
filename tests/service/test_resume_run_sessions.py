"""Resuming through the service a session another face made: `lathe run`, or `lathe mcp
serve`'s run_task (which keeps no record). The session file says what its runs were
started with (model, endpoint, approval mode, verify, turns), so the service goes on
with the same: never a default endpoint, nor a looser approval, in their place. A
session that cannot say (an older lathe wrote it; an endpoint holding credentials,
which lathe does not keep) is refused with a 400 naming what to give."""

from __future__ import annotations

import asyncio
import json

import pytest
from tests.e2e.test_run_edges import lathe_run
from tests.fakes.openai_server import Reply
from tests.service.scripts import workspace_for
from tests.service.test_mcp_server import _stdio

from lathe.client import ServiceError
from lathe.session import MessageEntry, ModelChangeEntry, SessionStore
from lathe.types import UserMessage


def _run(fake_openai, ws, tmp_path, *args: str) -> str:
    """`lathe run --json --model gpt-4o` (a model the catalog serves from its own
    endpoint, unless told another) against the fake; the session id it printed."""
    result = lathe_run(fake_openai, ws, tmp_path, "--json", "--model", "gpt-4o", *args)
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout.splitlines()[0])["session_id"]


def _again(client, session_id: str) -> dict:
    """Send one more message to a served session; its run's end."""
    after = client.session(session_id).raw["last_event_id"]
    client.send(session_id, "again")
    *_, finished = client.events(session_id, after=after, until="run_finished")
    return finished.data


def test_a_lathe_run_session_resumed_through_the_service_keeps_its_endpoint(
    served, fake_openai, tmp_path
):
    # It went to https://api.openai.com/v1: the service resumed it with the default.
    ws = workspace_for(tmp_path, "ws")
    fake_openai.enqueue(Reply("first"), Reply("second"))
    session_id = _run(fake_openai, ws, tmp_path, "say hi")
    with served.client() as client:
        resumed = client.resume(session_id)
        assert resumed.raw["base_url"] == fake_openai.base_url  # before a message goes
        finished = _again(client, session_id)

    assert resumed.model == "gpt-4o"
    assert finished["status"] == "unverified", finished
    assert len(fake_openai.chat_bodies()) == 2  # both runs went to the same endpoint


def test_a_read_only_lathe_run_session_comes_back_read_only_with_its_check(
    served, fake_openai, tmp_path
):
    # It came back "auto", able to change files, its verify and max_turns dropped.
    ws = workspace_for(tmp_path, "ro")
    fake_openai.enqueue(Reply("looked"))
    session_id = _run(fake_openai, ws, tmp_path, "--approval", "read-only", "--verify", "true",
                      "--max-turns", "3", "look")  # fmt: skip
    with served.client() as client:
        resumed = client.resume(session_id)
    record = json.loads((served.home / "serve" / "sessions" / f"{session_id}.json").read_text())

    assert resumed.raw["approval"] == "read-only"
    assert resumed.raw["verify"] == "true"
    assert record["max_turns"] == 3


def test_what_the_client_gives_on_resume_still_wins(served, fake_openai, tmp_path):
    ws = workspace_for(tmp_path, "wins")
    fake_openai.enqueue(Reply("looked"))
    session_id = _run(fake_openai, ws, tmp_path, "--approval", "read-only", "look")
    with served.client() as client:
        resumed = client.resume(session_id, approval="ask", verify="false")

    assert (resumed.raw["approval"], resumed.raw["verify"]) == ("ask", "false")


def test_an_endpoint_with_credentials_is_not_kept_and_a_resume_must_name_it(
    served, fake_openai, tmp_path
):
    ws = workspace_for(tmp_path, "creds")
    password = "hunter2-is-not-a-good-password-at-all"
    secret_url = fake_openai.base_url.replace("http://", f"http://bob:{password}@")
    fake_openai.enqueue(Reply("first"), Reply("second"))
    session_id = _run(fake_openai, ws, tmp_path, "--base-url", secret_url, "say hi")
    [path] = (served.home / "sessions").rglob(f"*_{session_id}.jsonl")
    assert password not in path.read_text()

    with served.client() as client:
        with pytest.raises(ServiceError) as refused:
            client.resume(session_id)
        resumed = client.resume(session_id, base_url=secret_url)
        finished = _again(client, session_id)

    assert refused.value.status == 400
    assert "base_url" in str(refused.value) and password not in str(refused.value)
    assert password not in resumed.raw["base_url"] and "127.0.0.1" in resumed.raw["base_url"]
    assert finished["status"] == "unverified", finished


def test_a_check_recorded_masked_is_not_run_masked_and_a_resume_must_name_it(
    served, fake_openai, tmp_path, monkeypatch
):
    # The service ran the recorded check as stored, its secret part an ellipsis.
    ws = workspace_for(tmp_path, "masked-check")
    secret = "s3cret-value-of-the-check-0123456789"
    monkeypatch.setenv("MY_DB_PASSWORD", secret)
    fake_openai.enqueue(Reply("first"))
    session_id = _run(fake_openai, ws, tmp_path, "--verify", f"test {secret} = x || true", "hi")

    with served.client() as client:
        with pytest.raises(ServiceError) as refused:
            client.resume(session_id)
        resumed = client.resume(session_id, verify="true")

    assert refused.value.status == 400
    assert "verify" in str(refused.value) and secret not in str(refused.value)
    assert resumed.raw["verify"] == "true"


def test_a_session_an_older_lathe_wrote_is_resumed_only_naming_endpoint_and_approval(
    served, fake_openai, tmp_path
):
    # Its file names only the model: the service filled in its own endpoint and "auto".
    ws = workspace_for(tmp_path, "old")
    with SessionStore(served.home).create(ws, "m") as session:
        session.append(MessageEntry(message=UserMessage(content="earlier")))
        session.append(ModelChangeEntry(provider="openai", model="m"))
    fake_openai.enqueue(Reply("second"))
    with served.client() as client:
        with pytest.raises(ServiceError) as refused:
            client.resume(session.id)
        with pytest.raises(ServiceError) as still:
            client.resume(session.id, base_url=fake_openai.base_url)
        with pytest.raises(ServiceError) as named_model:  # a model names its endpoint too
            client.resume(session.id, model="gpt-4o")
        resumed = client.resume(session.id, base_url=fake_openai.base_url, approval="ask")
        finished = _again(client, session.id)

    assert refused.value.status == 400 == still.value.status
    assert "base_url" in str(refused.value) and "approval" in str(refused.value)
    for only_approval in (still.value, named_model.value):
        assert "approval" in str(only_approval) and "base_url" not in str(only_approval)
    assert (resumed.raw["approval"], resumed.raw["base_url"]) == ("ask", fake_openai.base_url)
    assert finished["status"] == "unverified", finished


def test_a_run_task_session_resumed_through_the_service_keeps_endpoint_and_approval(
    fake_openai, tmp_path
):
    # run_task keeps no record: its session came back on the default endpoint, "auto".
    from mcp import Client
    from tests.service.server import ServeProcess

    ws = workspace_for(tmp_path, "mcp")
    fake_openai.enqueue(Reply("looked"), Reply("again"))

    async def run_task() -> str:
        transport, errlog = _stdio(tmp_path)
        with errlog:
            async with Client(transport, read_timeout_seconds=120) as client:
                ran = await client.call_tool(
                    "run_task",
                    {"workspace": str(ws), "task": "look", "model": "m",
                     "base_url": fake_openai.base_url, "approval": "read-only"},
                )  # fmt: skip
        assert not ran.is_error, ran.content
        return ran.structured_content["session_id"]

    session_id = asyncio.run(run_task())
    with ServeProcess(tmp_path / "home") as server, server.client() as client:
        resumed = client.resume(session_id)
        finished = _again(client, session_id)

    assert (resumed.raw["approval"], resumed.raw["base_url"]) == ("read-only",
                                                                  fake_openai.base_url)  # fmt: skip
    assert finished["status"] == "unverified", finished
    assert len(fake_openai.chat_bodies()) == 2
