"""Special files (a named pipe, a socket) are refused at once, never opened.

Reproduced on landed main: `read` on a named pipe in the workspace never returned (a
blocking open inside the async tool), so the whole run hung.
"""

from __future__ import annotations

import asyncio
import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest
from tests.fakes.openai_server import Call, Reply
from tests.tools.helpers import call_error

from lathe.agent.prompt import system_prompt
from lathe.instructions import Instructions
from lathe.tools.edit import EditTool
from lathe.tools.grep import GrepTool
from lathe.tools.read import ReadTool
from lathe.tools.write import WriteTool

CALLS = [
    (ReadTool(), {"path": "pipe"}),
    (GrepTool(), {"pattern": "x", "path": "pipe"}),
    (EditTool(), {"path": "pipe", "old_string": "a", "new_string": "b"}),
    (WriteTool(), {"path": "pipe", "content": "b"}),
]


@pytest.fixture
def pipe(workspace: Path) -> Path:
    path = workspace / "pipe"
    os.mkfifo(path)
    return path


@pytest.mark.parametrize(("tool", "arguments"), CALLS, ids=lambda v: getattr(v, "name", ""))
async def test_file_tools_refuse_a_named_pipe_at_once(ctx, pipe, tool, arguments):
    error = await asyncio.wait_for(call_error(tool, ctx, **arguments), timeout=5)
    assert "named pipe" in error


async def test_read_refuses_a_socket(ctx, workspace):
    server = socket.socket(socket.AF_UNIX)
    server.bind(str(workspace / "sock"))
    try:
        error = await asyncio.wait_for(call_error(ReadTool(), ctx, path="sock"), timeout=5)
    finally:
        server.close()
    assert "socket" in error


async def test_grep_over_a_folder_with_a_pipe_still_answers(ctx, pipe, workspace):
    (workspace / "a.txt").write_text("needle\n")
    out = await asyncio.wait_for(GrepTool().execute(GrepTool.parameters(pattern="needle"), ctx), 10)
    assert out.content == "a.txt:1:needle"


def test_the_prompt_never_opens_an_agents_file_that_is_a_pipe(workspace):
    os.mkfifo(workspace / "AGENTS.md")
    (workspace / "app.py").write_text("print(1)\n")

    assert Instructions(workspace).standing() == []
    prompt = system_prompt(workspace, ["read"], verify_command=None, snapshot_max_bytes=8192).text

    assert "print(1)" in prompt


@pytest.mark.parametrize("target", ["outside", ".env", "denied.txt"])
def test_an_agents_file_linked_to_a_file_it_may_not_show_is_left_out(workspace, tmp_path, target):
    (tmp_path / "outside").write_text("TOP SECRET\n")
    (workspace / ".env").write_text("TOP SECRET\n")
    (workspace / "denied.txt").write_text("TOP SECRET\n")
    link = tmp_path / "outside" if target == "outside" else workspace / target
    (workspace / "AGENTS.md").symlink_to(link)

    assert Instructions(workspace, no_read=["denied.txt"]).standing() == []


def test_many_empty_files_put_no_snapshot_in_the_prompt(workspace):
    """20,000 empty files gave a 591 KB "small workspace" snapshot: only content bytes
    were counted against its budget, not the names and headers it adds."""
    for n in range(3000):
        (workspace / f"empty_{n:05}.txt").touch()

    prompt = system_prompt(workspace, ["read"], verify_command=None, snapshot_max_bytes=8192).text

    assert "end of files" not in prompt
    assert len(prompt.encode()) < 16_000


def test_a_run_that_reads_a_pipe_finishes(tmp_path, fake_openai):
    ws = tmp_path / "ws"
    ws.mkdir()
    os.mkfifo(ws / "notes.txt")
    fake_openai.enqueue(Reply(calls=[Call("read", {"path": "notes.txt"})]), Reply("It is a pipe."))
    env = {k: v for k, v in os.environ.items() if not k.startswith(("LATHE_", "OPENAI_"))}
    env.update({"OPENAI_API_KEY": "sk-test", "LATHE_HOME": str(tmp_path / "home")})

    result = subprocess.run(
        [sys.executable, "-m", "lathe", "run", "--model", "m", "--base-url",
         fake_openai.base_url, "-C", str(ws), "read the notes"],
        cwd=tmp_path, env=env, capture_output=True, text=True, timeout=60,
        stdin=subprocess.DEVNULL,
    )  # fmt: skip

    assert result.returncode == 0, result.stderr
    tool = [m for m in fake_openai.chat_bodies()[-1]["messages"] if m["role"] == "tool"]
    assert "named pipe" in tool[0]["content"]
