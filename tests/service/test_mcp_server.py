"""lathe as an MCP server, through the `mcp` SDK's own client: `lathe mcp serve` over
stdio, and `/mcp` of `lathe serve` over streamable HTTP behind the service's token.
The scripted fake model does the work."""

from __future__ import annotations

import asyncio
import os
import sys

import httpx
import pytest
from tests.fakes.openai_server import Call, Reply
from tests.service.scripts import calc_workspace
from tests.waiting import while_running

TOOLS = {"run_task", "list_sessions", "session_transcript"}


def _fix_script(server):
    edit = {"path": "calc.py", "old_string": "a - b", "new_string": "a + b"}
    server.enqueue(Reply(calls=[Call("edit", edit)]), Reply("Fixed add."))


def _stdio(tmp_path):
    from mcp import StdioServerParameters
    from mcp.client.stdio import stdio_client

    env = {k: v for k, v in os.environ.items() if not k.startswith(("LATHE_", "OPENAI_"))}
    env.update(LATHE_HOME=str(tmp_path / "home"), OPENAI_API_KEY="sk-test")
    params = StdioServerParameters(
        command=sys.executable, args=["-m", "lathe", "mcp", "serve"], env=env, cwd=tmp_path
    )
    errlog = open(tmp_path / "stderr.log", "w")  # noqa: SIM115 (closed by the caller)
    return stdio_client(params, errlog=errlog), errlog


def test_stdio_runs_a_task_to_verified_with_progress_then_shows_the_session(fake_openai, tmp_path):
    from mcp import Client

    ws = calc_workspace(tmp_path)
    _fix_script(fake_openai)
    progress: list[tuple[float, str | None]] = []

    async def on_progress(value: float, total: float | None, message: str | None) -> None:
        progress.append((value, message))

    async def session() -> tuple:
        transport, errlog = _stdio(tmp_path)
        with errlog:
            async with Client(transport, read_timeout_seconds=120) as client:
                tools = {tool.name for tool in (await client.list_tools()).tools}
                ran = await client.call_tool(
                    "run_task",
                    {"workspace": str(ws), "task": "fix add", "model": "m",
                     "base_url": fake_openai.base_url,
                     "verify": f"{sys.executable} check.py"},
                    progress_callback=on_progress,
                )  # fmt: skip
                listed = await client.call_tool("list_sessions", {})
                session_id = ran.structured_content["session_id"]
                transcript = await client.call_tool(
                    "session_transcript", {"session_id": session_id}
                )
                unknown = await client.call_tool("session_transcript", {"session_id": "feedbeef00"})
        return tools, ran, listed, transcript, unknown

    tools, ran, listed, transcript, unknown = asyncio.run(session())

    assert tools == TOOLS
    assert not ran.is_error, ran.content
    result = ran.structured_content
    assert result["status"] == "verified"
    assert result["answer"] == "Fixed add."
    assert result["files_changed"] == ["calc.py"]
    assert result["evidence"]["source"] == "verify" and result["evidence"]["passed"] is True
    assert result["usage"]["total_tokens"] > 0
    assert "a + b" in (ws / "calc.py").read_text()
    messages = [message for _, message in progress]
    assert "turn 1: edit calc.py" in messages
    assert any(m and m.startswith("verify: ") for m in messages)
    assert [value for value, _ in progress] == sorted(value for value, _ in progress)

    [stored] = listed.structured_content["sessions"]
    assert stored["id"] == result["session_id"] and stored["workspace"] == str(ws)
    assert stored["status"] == "verified" and stored["title"] == "fix add"
    assert not transcript.is_error
    text = transcript.content[0].text
    assert "fix add" in text and "Fixed add." in text

    assert unknown.is_error
    [line] = unknown.content[0].text.splitlines()
    assert "feedbeef00" in line and "no session" in line
    # the run's session is no longer served: a later `lathe serve` does not bring it back
    assert not list((tmp_path / "home" / "serve" / "sessions").glob("*.json"))


def test_an_edit_the_mode_would_ask_about_is_denied_and_a_bad_workspace_is_a_tool_error(
    fake_openai, tmp_path
):
    from mcp import Client

    ws = calc_workspace(tmp_path)
    fake_openai.enqueue(
        Reply(calls=[Call("write", {"path": ".envrc", "content": "export X=1\n"})]),
        Reply("Could not write it."),
    )

    async def session() -> tuple:
        transport, errlog = _stdio(tmp_path)
        with errlog:
            async with Client(transport, read_timeout_seconds=120) as client:
                ran = await client.call_tool(
                    "run_task",
                    {"workspace": str(ws), "task": "add an envrc", "model": "m",
                     "base_url": fake_openai.base_url},
                )  # fmt: skip
                bad = await client.call_tool(
                    "run_task", {"workspace": str(tmp_path / "nowhere"), "task": "x"}
                )
        return ran, bad

    ran, bad = asyncio.run(session())

    assert not ran.is_error, ran.content
    assert ran.structured_content["status"] == "unverified"
    assert ran.structured_content["files_changed"] == []
    assert not (ws / ".envrc").exists()
    denied = fake_openai.chat_bodies()[1]["messages"][-1]["content"]
    assert "nobody answered" in denied
    assert bad.is_error and "not a directory" in bad.content[0].text


def test_streamable_http_at_mcp_runs_tasks_behind_the_token(served, fake_openai, tmp_path):
    from mcp import Client, MCPError
    from mcp.client.streamable_http import streamable_http_client
    from mcp.shared._httpx_utils import create_mcp_http_client

    ws = calc_workspace(tmp_path)
    _fix_script(fake_openai)
    progress: list[str | None] = []

    async def on_progress(value: float, total: float | None, message: str | None) -> None:
        progress.append(message)

    async def session(token: str) -> tuple:
        headers = {"Authorization": f"Bearer {token}"}
        async with create_mcp_http_client(headers=headers) as http:
            transport = streamable_http_client(f"{served.url}/mcp", http_client=http)
            async with Client(transport, read_timeout_seconds=120) as client:
                tools = {tool.name for tool in (await client.list_tools()).tools}
                ran = await client.call_tool(
                    "run_task",
                    {"workspace": str(ws), "task": "fix add", "model": "m",
                     "base_url": fake_openai.base_url},
                    progress_callback=on_progress,
                )  # fmt: skip
                listed = await client.call_tool("list_sessions", {"workspace": str(ws)})
        return tools, ran, listed

    tools, ran, listed = asyncio.run(session(served.token))

    assert tools == TOOLS
    assert ran.structured_content["status"] == "unverified", ran.content
    assert ran.structured_content["files_changed"] == ["calc.py"]
    assert "turn 1: edit calc.py" in progress
    [stored] = listed.structured_content["sessions"]
    assert stored["id"] == ran.structured_content["session_id"]
    assert served.client().sessions() == []  # served only while it ran

    with pytest.raises(ExceptionGroup) as refused:
        asyncio.run(session("wrong"))
    assert refused.group_contains(MCPError)
    initialize = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {}}
    for headers in ({}, {"Authorization": "Bearer wrong"}, {"Authorization": served.token}):
        response = httpx.post(f"{served.url}/mcp", json=initialize, headers=headers)
        assert response.status_code == 401
        assert response.json() == {"error": "unauthorized"}


def test_sigterm_during_a_stdio_run_task_ends_the_run_and_records_it(fake_openai, tmp_path):
    # The client (an editor) stopping `lathe mcp serve` with SIGTERM killed it where it
    # stood: the session stayed "unfinished", its run never ended.
    import json
    import signal
    import subprocess

    from tests.fakes.openai_server import Hang

    ws = calc_workspace(tmp_path)
    fake_openai.enqueue(Hang(60))
    env = {k: v for k, v in os.environ.items() if not k.startswith(("LATHE_", "OPENAI_"))}
    env.update(LATHE_HOME=str(tmp_path / "home"), OPENAI_API_KEY="sk-test")
    process = subprocess.Popen(
        [sys.executable, "-m", "lathe", "mcp", "serve"], env=env, cwd=tmp_path,
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
    )  # fmt: skip
    assert process.stdin is not None and process.stdout is not None

    def send(message: dict) -> None:
        process.stdin.write((json.dumps({"jsonrpc": "2.0", **message}) + "\n").encode())
        process.stdin.flush()

    send({"id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {},
        "clientInfo": {"name": "test", "version": "1"}}})  # fmt: skip
    assert b'"id":1' in process.stdout.readline()
    send({"method": "notifications/initialized"})
    send({"id": 2, "method": "tools/call", "params": {"name": "run_task", "arguments": {
        "workspace": str(ws), "task": "fix add", "model": "m",
        "base_url": fake_openai.base_url}}})  # fmt: skip
    while_running(process, fake_openai.chat_bodies, "no model request")

    process.send_signal(signal.SIGTERM)
    _, errors = process.communicate(timeout=60)

    assert process.returncode == 143, errors
    assert errors.decode().splitlines()[-1] == "lathe: terminated"
    [session] = (tmp_path / "home" / "sessions").rglob("*.jsonl")
    last = json.loads(session.read_text().splitlines()[-1])
    assert last["type"] == "run_end" and last["status"] == "interrupted"


def test_a_run_task_session_does_not_outlive_a_server_killed_during_the_call(fake_openai, tmp_path):
    # The call's session was kept in the registry: the next server served it for ever,
    # with nobody to drive it, and every later run_task in its workspace was refused.
    from mcp import Client
    from mcp.client.streamable_http import streamable_http_client
    from mcp.shared._httpx_utils import create_mcp_http_client
    from tests.fakes.openai_server import Hang
    from tests.service.server import ServeProcess

    ws = calc_workspace(tmp_path)
    home = tmp_path / "home"

    async def run_task(server: ServeProcess, task: str):
        headers = {"Authorization": f"Bearer {server.token}"}
        async with create_mcp_http_client(headers=headers) as http:
            transport = streamable_http_client(f"{server.url}/mcp", http_client=http)
            async with Client(transport, read_timeout_seconds=60) as client:
                return await client.call_tool("run_task", {
                    "workspace": str(ws), "task": task, "model": "m",
                    "base_url": fake_openai.base_url})  # fmt: skip

    async def killed_mid_call(server: ServeProcess) -> None:
        call = asyncio.ensure_future(run_task(server, "first"))
        while not fake_openai.requests:
            await asyncio.sleep(0.05)
        server.kill()
        with pytest.raises(BaseException):  # noqa: B017 (the transport's own error)
            await call

    fake_openai.enqueue(Hang(30))
    first = ServeProcess(home).start()
    asyncio.run(killed_mid_call(first))

    _fix_script(fake_openai)
    with ServeProcess(home) as again:
        assert again.client().sessions() == []
        ran = asyncio.run(run_task(again, "fix add"))
    assert not ran.is_error, ran.content
    assert ran.structured_content["files_changed"] == ["calc.py"]


def test_sigterm_during_an_http_run_task_answers_the_call_and_prints_no_traceback(
    fake_openai, tmp_path
):
    # The call was left to uvicorn's graceful timeout, then cancelled: a traceback on
    # stderr, and the client's call died without a result.
    from mcp import Client
    from mcp.client.streamable_http import streamable_http_client
    from mcp.shared._httpx_utils import create_mcp_http_client
    from tests.service.server import ServeProcess

    ws = calc_workspace(tmp_path)
    fake_openai.enqueue(Reply(calls=[Call("bash", {"command": "sleep 30"})]))
    server = ServeProcess(tmp_path / "home").start()
    said: list[str] = []

    async def call_then_sigterm():
        headers = {"Authorization": f"Bearer {server.token}"}
        async with create_mcp_http_client(headers=headers) as http:
            transport = streamable_http_client(f"{server.url}/mcp", http_client=http)
            async with Client(transport, read_timeout_seconds=60) as client:
                call = asyncio.ensure_future(client.call_tool("run_task", {
                    "workspace": str(ws), "task": "wait", "model": "m",
                    "base_url": fake_openai.base_url}))  # fmt: skip
                while len(fake_openai.requests) < 1:
                    await asyncio.sleep(0.05)
                await asyncio.sleep(0.5)  # the command runs
                said.append(await asyncio.to_thread(server.stop))
                answers.append(await call)

    answers: list = []
    try:
        asyncio.run(call_then_sigterm())
    except ExceptionGroup as failed:  # leaving the client: the server has gone by then
        ended = failed
    assert len(answers) == 1, (ended.exceptions, said)
    [ran] = answers
    assert ran.structured_content["status"] == "interrupted", ran.content
    assert "Traceback" not in said[0] and "Exception in ASGI" not in said[0], said[0]
