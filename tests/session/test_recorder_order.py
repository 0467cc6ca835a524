"""The session recorder names the entries behind the conversation the agent holds, in
its order: a compaction keeps from the right one."""

from __future__ import annotations

from pathlib import Path

from lathe.session import SessionStore
from lathe.types import AssistantMessage, ToolCall, ToolResultMessage, UserMessage
from lathe.ui.recorder import SessionRecorder


def test_a_compaction_after_a_reordered_result_keeps_the_message_it_kept(tmp_path: Path):
    # A served session's file may hold a message queued between a call and its result;
    # the conversation puts the result first, but the recorder's ids stayed in file
    # order, so keeping the last message kept the result, and the queued message was lost.
    call = ToolCall(id="c1", name="write", arguments='{"path": "x"}')
    store = SessionStore(tmp_path / "home")
    with store.create(tmp_path, "m") as session:
        for message in (
            UserMessage(content="write x"),
            AssistantMessage(tool_calls=(call,)),
            UserMessage(content="and also add a README"),
            ToolResultMessage(tool_call_id="c1", name="write", content="wrote x"),
        ):
            session.append_message(message)
        recorder = SessionRecorder(session)
        assert [m.role for m in session.conversation()] == ["user", "assistant", "tool", "user"]
        recorder.on_compaction("the summary", kept_messages=1, tokens_before=10, tokens_after=5)
        kept = session.conversation()

    assert kept[-1] == UserMessage(content="and also add a README")
