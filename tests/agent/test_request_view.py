"""The incremental request view sends exactly what pruning and shaping from scratch would,
however the history grows, the budget changes or the history is rewritten."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st
from tests.agent.test_context import conversations

from lathe.agent.compaction import ContextManager
from lathe.agent.context import (
    Budget,
    compacted_history,
    message_tokens,
    plan_compaction,
    prune_tool_outputs,
    request_messages,
)
from lathe.agent.request_view import RequestView
from lathe.llm.scripted import ScriptedProvider
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
    st.sampled_from([1, 2, 3, 64]),
)
def test_growing_history_gets_the_same_request_as_from_scratch(
    messages, steps, keeps, cut_at, chunk
):
    view = RequestView(chunk=chunk)
    history: list = []
    position = 0
    previous = None
    for turn, step in enumerate(steps):
        history.extend(messages[position : position + step])
        position += step
        keep = keeps[turn % len(keeps)]
        if turn == cut_at and (plan := plan_compaction(history, 3_000)):
            history[:] = compacted_history(plan, "summary")  # rewritten in place
        sent = view.update(history, keep)
        assert sent == _expected(history, keep)
        assert all(len(c) <= chunk for c in sent.chunks)
        if previous is not None:  # a chunk whose messages did not change is the same one
            for before, after in zip(previous.chunks, sent.chunks, strict=False):
                if len(before) == len(after) and all(map(_same, before, after)):
                    assert before is after
        previous = sent
    assert view.count == len(history)


def _same(a, b) -> bool:
    return a is b


def _with_kept_from_scratch(sent, kept):
    """The rule `ContextManager` applies, computed over the whole request."""
    held = [m.content for m in sent if not isinstance(m, AssistantMessage)]
    missing = [text for text in kept if not any(text in content for content in held)]
    if not kept or not sent or not missing:
        return list(sent)
    opening = UserMessage(content="\n\n".join([sent[0].content, *missing]))
    return [opening, *sent[1:]]


@settings(max_examples=200, deadline=None)
@given(
    conversations(),
    st.lists(st.integers(1, 6), min_size=1, max_size=40),
    st.lists(st.integers(0, 12_000), min_size=1, max_size=8),
    st.lists(st.sets(st.sampled_from(["RULE-A", "RULE-B", "yyyy"])), min_size=1, max_size=5),
    st.integers(0, 30),
)
async def test_texts_kept_verbatim_are_added_as_from_scratch(messages, steps, keeps, kepts, cut):
    """Tool outputs carrying a text to keep get pruned, the texts to keep change, the
    history is compacted: the request still carries what the whole-request rule gives."""
    kept: list[str] = []
    budget = Budget(context_window=10**9, tool_output_keep_tokens=0)
    manager = ContextManager(
        budget, ScriptedProvider(), lambda event: None, fixed_tokens=0, kept_verbatim=lambda: kept
    )
    manager._view = RequestView(chunk=2)  # many chunks in a conversation this short
    history: list = []
    position = 0
    for turn, step in enumerate(steps):
        for message in messages[position : position + step]:
            if isinstance(message, ToolResultMessage) and turn % 2:
                message = ToolResultMessage(
                    tool_call_id=message.tool_call_id, name="read", content="RULE-A RULE-B"
                )
            history.append(message)
        position += step
        kept[:] = sorted(kepts[turn % len(kepts)])
        manager.budget = Budget(
            context_window=10**9, tool_output_keep_tokens=keeps[turn % len(keeps)]
        )
        if turn == cut and (plan := plan_compaction(history, 3_000)):
            history[:] = compacted_history(plan, "summary", kept=kept)
        sent = await manager.prepare(history)
        keep = manager.budget.tool_output_keep_tokens
        assert list(sent) == _with_kept_from_scratch(_expected(history, keep), kept)


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
