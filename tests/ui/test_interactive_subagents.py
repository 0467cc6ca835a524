"""Subagents in the interactive terminal: a child's live status, its end, the list of
this session's children and one child's transcript (issue 17, item 6)."""

from __future__ import annotations

from typing import Any

import pytest
from tests.fakes.openai_server import Call, FakeOpenAIServer, Reply


def test_a_childs_end_shows_and_agents_opens_its_transcript(
    launch, fake_openai: FakeOpenAIServer
) -> None:
    def answer(body: dict[str, Any]) -> Reply:
        opening = next(m["content"] for m in body["messages"] if m["role"] == "user")
        turns = sum(1 for m in body["messages"] if m["role"] == "assistant")
        if "[child K]" in opening:
            return (
                Reply(calls=[Call("read", {"path": "app.py"})])
                if turns == 0
                else Reply("the child read app.py")
            )
        if turns == 0:
            brief = {"description": "look", "prompt": "[child K] read app.py"}
            return Reply(calls=[Call("task", brief, id="call_K")])
        return Reply("Parent done.")

    fake_openai.responder = answer
    term = launch("--approval", "auto")
    term.send("hand it to a subagent")
    term.wait_for(r"\[look\] unverified after 2 turns")
    term.wait_for(r"Parent done\.")
    term.send("/agents")
    screen = term.wait_for(r"/agents ID shows")
    child_id = next(
        line.split()[0] for line in screen.splitlines() if "[child K] read app.py" in line
    )
    term.send(f"/agents {child_id[:6]}")
    term.wait_for(r"the child read app\.py")


def test_a_child_runs_under_the_approval_mode_set_in_the_session(
    launch, fake_openai: FakeOpenAIServer, workspace
) -> None:
    # Children took the approval the app started with: after `--approval full` then
    # `/approval ask`, an approved task call's child ran its commands unasked.
    def answer(body: dict[str, Any]) -> Reply:
        opening = next(m["content"] for m in body["messages"] if m["role"] == "user")
        turns = sum(1 for m in body["messages"] if m["role"] == "assistant")
        if "[child M]" in opening:
            return (
                Reply(calls=[Call("bash", {"command": "touch CHILD_RAN"})])
                if turns == 0
                else Reply("the child is done")
            )
        if turns == 0:
            brief = {"description": "make", "prompt": "[child M] touch a file"}
            return Reply(calls=[Call("task", brief, id="call_M")])
        return Reply("Parent done.")

    fake_openai.responder = answer
    term = launch("--approval", "full")
    term.send("/approval ask")
    term.wait_for(r"approval: ask")
    term.send("hand it to a subagent")
    term.wait_for(r"allow\?")
    term.send("y")
    term.wait_for(r"Parent done\.")
    assert not (workspace / "CHILD_RAN").exists()


def _task_description(server: FakeOpenAIServer) -> str:
    tools = server.chat_bodies()[-1]["tools"]
    return next(t["function"]["description"] for t in tools if t["function"]["name"] == "task")


@pytest.mark.parametrize(("start", "then"), [("ask", "auto"), ("full", "ask")])
def test_the_task_tools_description_holds_whatever_approval_the_session_moves_to(
    launch, fake_openai: FakeOpenAIServer, start: str, then: str
) -> None:
    # Written at start for the mode then: started in ask, then `/approval auto`, it
    # still said "subagents cannot change files"; started in full, then `/approval ask`,
    # it said nothing of ask mode. It is the same in every mode now, the rule per mode.
    fake_openai.responder = lambda body: Reply("noted")
    term = launch("--approval", start)
    term.send(f"/approval {then}")
    term.wait_for(rf"approval: {then}")
    term.send("hello")
    term.wait_for(r"noted")
    described = _task_description(fake_openai)
    assert "In this session" not in described, described
    assert "in ask mode" in described.lower() and "read-only mode" in described, described


def test_a_session_started_read_only_offers_subagents_once_approval_allows(
    launch, fake_openai: FakeOpenAIServer, workspace
) -> None:
    # With no profile that changes nothing, read-only mode left the task tool out for
    # good: after `/approval auto` the model still had no task tool.
    agents = workspace / ".lathe" / "agents"
    agents.mkdir(parents=True)
    (agents / "explore.md").write_text("---\ndescription: edits too\ntools: read, edit\n---\nGo.\n")
    fake_openai.responder = lambda body: Reply("noted")
    term = launch("--approval", "read-only")
    term.send("/approval auto")
    term.wait_for(r"approval: auto")
    term.send("hello")
    term.wait_for(r"noted")
    assert "read-only mode" in _task_description(fake_openai)
