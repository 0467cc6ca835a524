"""End to end: a run that took a server's tools from the cache lists them again once the
server starts, and what the newer list says of a tool the run already has — whether it
is read-only, its schema — holds for the rest of the run."""

from __future__ import annotations

import json
import time
from pathlib import Path

from tests.e2e.test_mcp import received, run, stdio_server, tool_results, user_config, workspace
from tests.fakes.openai_server import Call, Reply


def _add_in_cache(home: Path) -> dict:
    [cache] = (home / "mcp-tools").glob("srv-*.json")
    tools = json.loads(cache.read_text())["tools"]
    return next(tool for tool in tools if tool["name"] == "add")


def test_a_tool_no_longer_marked_read_only_is_refused_once_the_server_relisted_it(
    tmp_path, fake_openai
):
    # The cache said `add` was read-only; the server's newer release no longer marks it
    # so. The run refreshed the cache but kept judging `add` by the old list: every call
    # of it ran under --approval read-only for the whole run, checked against the old
    # schema.
    ws = workspace(tmp_path)
    newer = tmp_path / "newer"
    user_config(tmp_path, {"srv": stdio_server(tmp_path, "--newer-if", str(newer))})
    fake_openai.enqueue(Reply("Listed."))
    assert run(fake_openai, tmp_path, ws).returncode == 0
    assert _add_in_cache(tmp_path / "home")["read_only"] is True
    newer.touch()

    def after_the_relisting(body: dict) -> Reply:
        """The second request waits for the background relisting (the cache it writes)."""
        deadline = time.monotonic() + 60
        while _add_in_cache(tmp_path / "home")["read_only"]:
            assert time.monotonic() < deadline, "the server's tools were not listed again"
            time.sleep(0.05)
        fake_openai.responder = lambda body: Reply("Done.")
        return Reply(
            calls=[
                Call("mcp__srv__add", {"a": 1, "b": 2, "c": 3}),
                Call("mcp__srv__add", {"a": 1, "b": 2}),
            ]
        )

    # Reading a resource starts the server, which lists its tools again.
    fake_openai.enqueue(
        Reply(calls=[Call("mcp_resource", {"server": "srv", "uri": "note://hello"})])
    )
    fake_openai.responder = after_the_relisting

    result = run(fake_openai, tmp_path, ws, "--approval", "read-only")

    assert result.returncode == 0, result.stderr
    denied, invalid = tool_results(fake_openai.chat_bodies()[-1])[-2:]
    assert "read-only" in denied, denied
    assert "invalid arguments for mcp__srv__add" in invalid and '"c"' in invalid, invalid
    assert received(tmp_path) == []
