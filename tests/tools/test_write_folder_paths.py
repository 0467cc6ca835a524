"""A write to a path that names a folder by its form ("newdir/") is refused before
anything is written: the path resolved without its slash, so a regular file `newdir`
was created and a later write of newdir/x.py failed. Reproduced with the real CLI.
"""

from __future__ import annotations

import pytest
from tests.e2e.test_run_edges import lathe_run
from tests.fakes.openai_server import Call, Reply
from tests.tools.helpers import call, call_error, snapshot

from lathe.tools.base import ToolContext
from lathe.tools.write import WriteTool

write = WriteTool()


def test_a_path_ending_in_a_slash_is_refused_in_a_run(tmp_path, fake_openai):
    ws = tmp_path / "ws"
    ws.mkdir()
    fake_openai.enqueue(
        Reply(calls=[Call("write", {"path": "newdir/", "content": "hi\n"})]),
        Reply(calls=[Call("write", {"path": "newdir/x.py", "content": "x = 1\n"})]),
        Reply("Written."),
    )
    done = lathe_run(fake_openai, ws, tmp_path, "--approval", "full", "Make newdir/x.py")
    assert done.returncode == 0, done.stderr
    last = fake_openai.chat_bodies()[-1]["messages"]
    refused, created = [m["content"] for m in last if m["role"] == "tool"]
    assert "newdir/ names a folder, not a file" in refused
    assert created == "Created newdir/x.py (1 line)."
    assert (ws / "newdir" / "x.py").read_text() == "x = 1\n"


@pytest.mark.parametrize("path", ["newdir/", "newdir/.", "a/b/..", "new//", "."])
async def test_a_folder_path_is_refused_and_nothing_is_written(ctx: ToolContext, path) -> None:
    before = snapshot(ctx.workspace)
    error = await call_error(write, ctx, path=path, content="hi\n")
    assert error.startswith(f"{path} names a folder, not a file")
    assert snapshot(ctx.workspace) == before
    assert not (ctx.workspace / "newdir").exists()
    assert not (ctx.workspace / "new").exists()


async def test_an_existing_folder_given_with_a_slash_is_refused(ctx: ToolContext) -> None:
    (ctx.workspace / "src").mkdir()
    error = await call_error(write, ctx, path="src/", content="hi\n")
    assert error.startswith("src/ names a folder, not a file")


async def test_a_file_path_is_written_as_before(ctx: ToolContext) -> None:
    out = await call(write, ctx, path="newdir/.env.example", content="A=1\n")
    assert out.content == "Created newdir/.env.example (1 line)."
