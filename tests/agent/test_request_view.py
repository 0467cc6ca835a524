"""The incremental request view sends exactly what pruning and shaping from scratch would,
however the history grows, the budget changes or the history is rewritten."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st
from tests.agent.test_context import conversations

from lathe.agent.context import (
    compacted_history,
    message_tokens,
    plan_compaction,
    prune_tool_outputs,
    request_messages,
)
from lathe.agent.request_view import RequestView
from lathe.types import AssistantMessage, ToolCall, ToolResultMessage, UserMessage


def _expected(history, keep):
    pruned = history if keep is None else prune_tool_outputs(history, keep)
    return request_messages(pruned)


@settings(max_examples=300, deadline=None)
@given(
    conversations(),
    st.lists(st.integers(1, 6), min_size=1, max_size=40),
    st.lists(st.one_of(st.none(), st.integers(0, 12_000)), min_size=1, max_size=8),
    st.integers(0, 30),
)
def test_growing_history_gets_the_same_request_as_from_scratch(messages, steps, keeps, cut_at):
    view = RequestView()
    history: list = []
    position = 0
    for turn, step in enumerate(steps):
        history.extend(messages[position : position + step])
        position += step
        keep = keeps[turn % len(keeps)]
        if turn == cut_at and (plan := plan_compaction(history, 3_000)):
            history[:] = compacted_history(plan, "summary")  # rewritten in place
        assert view.update(history, keep) == _expected(history, keep)
    assert view.count == len(history)


def test_the_estimate_follows_what_is_sent():
    call = ToolCall(id="a", name="read", arguments='{"path": "big.py"}')
    history = [
        UserMessage(content="task"),
        AssistantMessage(tool_calls=(call,)),
        ToolResultMessage(tool_call_id="a", name="read", content="x" * 30_000),
        AssistantMessage(text="next"),
        UserMessage(content="go on"),
    ]
    view = RequestView()

    whole = view.update(history, None)
    whole_tokens = view.tokens(0)
    pruned = view.update(history, 100)

    assert whole[2].content == "x" * 30_000
    assert pruned[2].content.startswith("[pruned: the output of read(")
    assert view.tokens(0) < whole_tokens / 50
    assert view.tokens(3) == message_tokens(history[3]) + message_tokens(history[4])
    assert view.tokens(2) - view.tokens(3) == message_tokens(pruned[2])


def test_unchanged_messages_keep_their_identity_between_requests():
    history = [UserMessage(content="task")]
    view = RequestView()
    first = view.update(history, 1_000)
    for i in range(5):
        call = ToolCall(id=f"c{i}", name="bash", arguments='{"command": "ls"}')
        history += [
            AssistantMessage(tool_calls=(call,)),
            ToolResultMessage(tool_call_id=call.id, name="bash", content="y" * 600),
        ]
    second = view.update(history, 1_000)
    third = view.update(history, 1_000)

    assert second[0] is first[0]
    assert all(a is b for a, b in zip(second, third, strict=True))  # stubs are reused
    assert second == _expected(history, 1_000)
