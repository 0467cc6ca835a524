"""A subagent profile naming MCP tools (`tools: read, mcp__fk__echo`, or a glob
`mcp__fk__*`) gives the child those of the parent's MCP tools, over the parent's own
connections, under the parent's rules and the child's approval. One the run lacks (no
such server, not trusted, it did not start, no such tool) refuses the task call, saying
which and why. Before, the child's requests carried `tools=['read']`, its call got
"there is no tool named 'mcp__fk__echo'", and the parent read `completed`.

Through `python -m lathe run` with the SDK-built fake MCP server and the fake model,
which answers the parent and the child by what their requests contain."""

from __future__ import annotations

import json
import sys
import threading
from pathlib import Path

import pytest
from tests.e2e.test_mcp import (
    assert_server_gone,
    lathe,
    received,
    stdio_server,
    tool_names,
    tool_results,
    user_config,
)
from tests.fakes.openai_server import Call, Reply
from tests.subagents.test_task_tool import (
    Script,
    _first_user_text,
    _project,
    _results,
    _task,
    _turn,
)


def _profile(ws: Path, name: str, tools: str, approval: str = "") -> None:
    folder = ws / ".lathe" / "agents"
    folder.mkdir(parents=True, exist_ok=True)
    extra = f"approval: {approval}\n" if approval else ""
    (folder / f"{name}.md").write_text(
        f"---\ndescription: uses the server\ntools: {tools}\n{extra}---\nGo.\n"
    )


def _run(server, tmp_path: Path, ws: Path, *args: str):
    return lathe(
        "run", "--json", "--model", "m", "--base-url", server.base_url, "-C", str(ws), *args,
        "use the tools", tmp_path=tmp_path,
    )  # fmt: skip


def _bodies_of(server, marker: str) -> list[dict]:
    return [b for b in server.chat_bodies() if marker in _first_user_text(b)]


def test_a_child_gets_the_mcp_tool_its_profile_names_and_calls_it(tmp_path, fake_openai):
    ws = _project(tmp_path)
    user_config(tmp_path, {"fk": stdio_server(tmp_path)})
    _profile(ws, "mcpuser", "read, mcp__fk__echo")
    fake_openai.responder = Script(
        parent=[Reply(calls=[_task("echo", "[child M] call echo", agent="mcpuser")]),
                Reply("done")],
        children={"[child M]": [Reply(calls=[Call("mcp__fk__echo", {"text": "from child"})]),
                                Reply("it echoed")]},
    )  # fmt: skip

    result = _run(fake_openai, tmp_path, ws)

    assert result.returncode == 0, result.stderr[-3000:]
    first, second = _bodies_of(fake_openai, "[child M]")
    assert sorted(tool_names(first)) == ["mcp__fk__echo", "read"]
    assert tool_results(second) == ["echo: from child"]
    assert received(tmp_path) == [{"name": "echo", "arguments": {"text": "from child"}}]
    told = _results(result.stdout)["call_echo"]
    assert told["is_error"] is False and "it echoed" in told["output"], told["output"]
    assert_server_gone(tmp_path)


def test_a_glob_names_every_tool_of_a_server_and_the_rules_and_approval_hold(tmp_path, fake_openai):
    ws = _project(tmp_path)
    user_config(tmp_path, {"fk": stdio_server(tmp_path)})
    # approval ask: with no one to ask, what changes things is refused; `add` reads only.
    _profile(ws, "asker", "read, mcp__fk__*", approval="ask")
    calls = [Call("mcp__fk__add", {"a": 1, "b": 1}), Call("mcp__fk__echo", {"text": "asked"}),
             Call("mcp__fk__fail", {"why": "denied"})]  # fmt: skip
    fake_openai.responder = Script(
        parent=[Reply(calls=[_task("sum", "[child G] add things", agent="asker")]),
                Reply("done")],
        children={"[child G]": [Reply(calls=calls), Reply("added")]},
    )  # fmt: skip

    result = _run(fake_openai, tmp_path, ws, "--deny", "mcp__fk__fail")

    assert result.returncode == 0, result.stderr[-3000:]
    parents = [b for b in fake_openai.chat_bodies() if "[child G]" not in _first_user_text(b)]
    servers = {n for n in tool_names(parents[0]) if n.startswith("mcp__fk__")}
    assert {"mcp__fk__echo", "mcp__fk__add", "mcp__fk__fail"} <= servers
    first, second = _bodies_of(fake_openai, "[child G]")
    assert set(tool_names(first)) == {"read", *servers}
    added, echoed, failed = tool_results(second)
    assert added == "2"
    assert "needs approval" in echoed and "echo: asked" not in echoed, echoed
    assert "mcp__fk__fail" in failed and "failed on purpose" not in failed, failed
    assert received(tmp_path) == [{"name": "add", "arguments": {"a": 1, "b": 1}}]


def _failing_server() -> dict:
    return {"command": sys.executable, "args": ["-c", "raise SystemExit(1)"]}


@pytest.mark.parametrize(
    ("named", "servers", "said"),
    [
        ("mcp__gh__get_issue", "fk", "no MCP server named gh"),
        ("mcp__gh__*", "fk", "no MCP server named gh"),
        ("mcp__fk__nope", "fk", "mcp__fk__echo"),  # the tools fk has, to pick from
        ("mcp__FK__echo", "fk", "did you mean mcp__fk__echo?"),
        ("mcp__fk__echo", "failing", "could not be listed"),
        ("mcp__proj__echo", "untrusted", "not trusted"),
    ],
)
def test_a_profile_naming_an_mcp_tool_the_run_lacks_refuses_the_call_saying_why(
    tmp_path, fake_openai, named, servers, said
):
    ws = _project(tmp_path)
    if servers == "untrusted":
        mcp_json = {"mcpServers": {"proj": stdio_server(tmp_path)}}
        (ws / ".mcp.json").write_text(json.dumps(mcp_json))
    else:
        user_config(tmp_path, {"fk": _failing_server() if servers == "failing"
                               else stdio_server(tmp_path)})  # fmt: skip
    _profile(ws, "mcpuser", f"read, {named}")
    fake_openai.responder = Script(
        parent=[Reply(calls=[_task("echo", "[child M] call echo", agent="mcpuser")]),
                Reply("done")],
        children={"[child M]": [Reply(calls=[Call("read", {"path": "a.py"})]), Reply("ok")]},
    )  # fmt: skip

    result = _run(fake_openai, tmp_path, ws)

    assert result.returncode == 0, result.stderr[-3000:]
    told = _results(result.stdout)["call_echo"]
    assert told["is_error"] is True, told["output"]
    assert named in told["output"] and said in told["output"], told["output"]
    assert "mcpuser" in told["output"] and "\n" not in told["output"].strip(), told["output"]
    assert _bodies_of(fake_openai, "[child M]") == []


def test_children_share_the_parents_server_and_its_tools_stay_deferred(tmp_path, fake_openai):
    # A profile without `tools:` (general) has every tool of the parent's: its MCP tools
    # too, deferred behind a search of the child's own as the parent's are. Two children
    # at once call the one server the parent started.
    ws = _project(tmp_path)
    user_config(tmp_path, {"many": stdio_server(tmp_path, "--many", "200", "--say-env", "HOME")})
    both_started = threading.Barrier(2, timeout=20)
    first = {
        "[child A]": Reply(calls=[Call("tool_search", {"query": "records of kind 7"}),
                                  Call("mcp__many__tool_7", {"query": "a"})]),
        "[child B]": Reply(calls=[Call("mcp__many__tool_9", {"query": "b", "limit": 1})]),
    }  # fmt: skip
    parent = Script(
        parent=[Reply(calls=[_task("A", "[child A] look up a"), _task("B", "[child B] b")]),
                Reply("done")],
        children={},
    )  # fmt: skip

    def responder(body: dict) -> Reply:
        opening = _first_user_text(body)
        for marker, reply in first.items():
            if marker in opening:
                if _turn(body) == 0:
                    both_started.wait()  # passes only with both children running
                    return reply
                return Reply(f"done {marker}")
        return parent(body)

    fake_openai.responder = responder
    result = _run(fake_openai, tmp_path, ws)

    assert result.returncode == 0, result.stderr[-3000:]
    a_first, a_second = _bodies_of(fake_openai, "[child A]")
    advertised = tool_names(a_first)
    assert "tool_search" in advertised and "mcp_resource" in advertised
    assert not [n for n in advertised if n.startswith("mcp__many__")]
    found, looked_up = tool_results(a_second)
    assert json.loads(found)[0]["name"] == "mcp__many__tool_7"
    assert looked_up == "tool_7 answered 'a' (limit 10)"
    (b_second,) = _bodies_of(fake_openai, "[child B]")[1:]
    assert tool_results(b_second) == ["tool_9 answered 'b' (limit 1)"]
    assert sorted(c["name"] for c in received(tmp_path)) == ["tool_7", "tool_9"]
    log = (tmp_path / "home" / "logs" / "mcp-many.log").read_text()
    assert log.count("starting with HOME=") == 1, log
    told = _results(result.stdout)
    assert not told["call_A"]["is_error"] and not told["call_B"]["is_error"]
    assert_server_gone(tmp_path)


@pytest.mark.parametrize("outer_has", ["", ", mcp__fk__add"])
def test_a_grandchild_naming_an_mcp_tool_its_parents_profile_leaves_out_is_told_so(
    tmp_path, fake_openai, outer_has
):
    # The server started fine; the child's own allow list left mcp__fk__echo out. The
    # refusal said fk's tools "could not be listed in this run (it did not start...)",
    # or that fk "offers only mcp__fk__add".
    ws = _project(tmp_path)
    user_config(tmp_path, {"fk": stdio_server(tmp_path)})
    _profile(ws, "outer", f"read, edit, task{outer_has}")
    _profile(ws, "inner", "read, mcp__fk__echo")
    fake_openai.responder = Script(
        parent=[Reply(calls=[_task("o", "[child O] delegate", agent="outer")]), Reply("done")],
        children={"[child O]": [Reply(calls=[_task("i", "[child I] echo", agent="inner")]),
                                Reply("could not")],
                  "[child I]": [Reply("never")]},
    )  # fmt: skip

    result = _run(fake_openai, tmp_path, ws, "--approval", "full")

    assert result.returncode == 0, result.stderr[-3000:]
    [refused] = tool_results(_bodies_of(fake_openai, "[child O]")[1])
    assert "mcp__fk__echo" in refused and "allow list" in refused, refused
    assert "outer" in refused and "could not be listed" not in refused, refused
    assert "offers only" not in refused, refused
    assert _bodies_of(fake_openai, "[child I]") == []
