"""The context budget: pruning and compaction never produce an invalid request."""

from __future__ import annotations

import json

from hypothesis import given, settings
from hypothesis import strategies as st

from lathe.agent.context import (
    compacted_history,
    plan_compaction,
    prune_tool_outputs,
    request_messages,
    request_problems,
)
from lathe.types import AssistantMessage, ToolCall, ToolResultMessage, UserMessage

_ids = iter(range(10**9))


@st.composite
def conversations(draw):
    """A task, then turns: assistant replies with 0-3 calls and their results, with
    occasional user messages (verify feedback, nudges) between turns."""
    messages = [UserMessage(content="task: " + draw(st.text(max_size=40)))]
    for _ in range(draw(st.integers(1, 25))):
        calls = tuple(
            ToolCall(id=f"c{next(_ids)}", name="read", arguments=json.dumps({"path": "x"}))
            for _ in range(draw(st.integers(0, 3)))
        )
        messages.append(AssistantMessage(text=draw(st.text(max_size=30)), tool_calls=calls))
        for call in calls:
            size = draw(st.integers(0, 4000))
            messages.append(
                ToolResultMessage(tool_call_id=call.id, name="read", content="y" * size)
            )
        if not calls or draw(st.booleans()):
            messages.append(UserMessage(content="feedback " + draw(st.text(max_size=20))))
    return messages


@settings(max_examples=300, deadline=None)
@given(conversations(), st.integers(0, 20_000), st.integers(0, 20_000))
def test_every_request_built_is_valid(messages, keep_recent, keep_outputs):
    assert request_problems(request_messages(messages)) == []

    plan = plan_compaction(messages, keep_recent)
    history = compacted_history(plan, "summary") if plan else messages
    sent = request_messages(prune_tool_outputs(history, keep_outputs))

    assert request_problems(sent) == []
    assert sent[0].content.startswith(messages[0].content)  # the task is never lost
    assert len(sent) <= len(request_messages(messages))


def test_pruning_keeps_the_newest_results_whole_and_names_what_was_removed():
    calls = [
        ToolCall(id=f"k{i}", name="read", arguments=json.dumps({"path": f"f{i}.py"}))
        for i in range(3)
    ]
    messages = [UserMessage(content="task")]
    for call in calls:
        messages.append(AssistantMessage(tool_calls=(call,)))
        messages.append(ToolResultMessage(tool_call_id=call.id, name="read", content="z" * 8000))

    pruned = prune_tool_outputs(messages, keep_tokens=2500)

    contents = [m.content for m in pruned if isinstance(m, ToolResultMessage)]
    assert contents[2] == "z" * 8000
    assert contents[0].startswith("[pruned: the output of read(") and "f0.py" in contents[0]
    assert messages[2].content == "z" * 8000  # the history itself is untouched


def test_compaction_keeps_the_task_and_the_recent_turns_verbatim():
    messages = [UserMessage(content="fix the bug")]
    for i in range(10):
        call = ToolCall(id=f"r{i}", name="bash", arguments='{"command": "pytest"}')
        messages += [
            AssistantMessage(text=f"step {i}", tool_calls=(call,)),
            ToolResultMessage(tool_call_id=call.id, name="bash", content="out " * 500),
        ]

    plan = plan_compaction(messages, recent_keep_tokens=1200)
    history = compacted_history(plan, "Goal: fix the bug")

    assert history[0].content.startswith("fix the bug")
    assert "Goal: fix the bug" in history[0].content
    assert history[1:] == messages[-len(plan.recent) :]
    assert isinstance(history[1], AssistantMessage)


def test_a_request_never_asks_for_no_output_room_at_all() -> None:
    # With no output reserve and a prompt past the window, max_tokens came out 0, which
    # servers refuse as a bad request, not as too long.
    from lathe.agent.compaction import ContextManager
    from lathe.agent.context import Budget

    manager = ContextManager(
        Budget(context_window=1_000, output_reserve=0), None, lambda event: None,
        fixed_tokens=2_000,
    )  # fmt: skip
    assert manager.output_tokens(4_096) == 256
    assert manager.output_tokens(100) == 100
    assert manager.output_tokens(None) is None


def test_a_second_compaction_replaces_the_first_summary_and_keeps_the_request():
    # Each compaction kept every earlier summary in the opening message (the summariser
    # had read them, so the new one covers them): five compactions, five summaries.
    heading, asked = "[Summary]", "[The latest request]"

    def grown(history, n):
        for i in range(n):
            call = ToolCall(id=f"r{len(history)}_{i}", name="bash", arguments="{}")
            history += [
                AssistantMessage(text=f"step {i}", tool_calls=(call,)),
                ToolResultMessage(tool_call_id=call.id, name="bash", content="out " * 500),
            ]
        return history

    messages = grown([UserMessage(content="fix the bug"), UserMessage(content="and the docs")], 6)
    kept = ("AGENTS.md says: run make",)
    first = compacted_history(plan_compaction(messages, 1200), "summary one", heading, kept, asked)
    second = compacted_history(
        plan_compaction(grown(first, 6), 1200), "summary two", heading, kept, asked
    )

    opening = second[0].content
    assert opening.startswith("fix the bug")
    assert opening.count(heading) == 1 and "summary two" in opening
    assert "summary one" not in opening
    assert opening.count("AGENTS.md says: run make") == 1
    assert opening.count("and the docs") == 1 and opening.endswith(f"{asked}\nand the docs")


def _opened_by_a_compaction(task: str, summary: str, recent_user: str | None = None) -> list:
    """A history a first compaction opened: the task, its summary, then turns."""
    from lathe.words import load_words

    words = load_words()
    opening = (
        f"{task}\n\n{words.say('summary_heading')}\n{summary}\n\n"
        f"{words.say('request_heading')}\nfix bug A"
    )
    history = [UserMessage(content=opening)]
    for i in range(8):
        call = ToolCall(id=f"c{i}", name="bash", arguments="{}")
        history += [
            AssistantMessage(text=f"step {i}", tool_calls=(call,)),
            ToolResultMessage(tool_call_id=call.id, name="bash", content="out " * 800),
        ]
        if i == 6 and recent_user is not None:
            history.append(UserMessage(content=recent_user))
    return history


async def test_a_second_summariser_reads_the_first_summary_whatever_the_tasks_length():
    # The summariser saw the opening message cut at a quarter of its room: a long task
    # pushed the first summary out of what it read, and the second compaction lost it.
    from lathe.agent.compaction import ContextManager
    from lathe.agent.context import Budget
    from lathe.llm.scripted import ScriptedProvider, reply

    provider = ScriptedProvider([reply("SUMMARY-TWO")])
    manager = ContextManager(
        Budget(context_window=8_000, output_reserve=1_000), provider, lambda event: None,
        fixed_tokens=100,
    )  # fmt: skip
    history = _opened_by_a_compaction("T" * 20_000, "SUMMARY-ONE-FACTS")

    assert await manager.compact(history, reason="test")

    asked = provider.requests[0].messages[0].content
    assert "SUMMARY-ONE-FACTS" in asked and "fix bug A" in asked


async def test_a_summary_that_fails_keeps_the_first_summary():
    from lathe.agent.compaction import ContextManager
    from lathe.agent.context import Budget
    from lathe.llm.scripted import ScriptedProvider

    manager = ContextManager(
        Budget(context_window=8_000, output_reserve=1_000), ScriptedProvider([]),
        lambda event: None, fixed_tokens=100,
    )  # fmt: skip
    history = _opened_by_a_compaction("fix the bug", "SUMMARY-ONE-FACTS")

    assert await manager.compact(history, reason="test")

    assert "SUMMARY-ONE-FACTS" in history[0].content


def test_a_request_the_recent_part_holds_replaces_the_carried_one():
    history = _opened_by_a_compaction("T", "S1", recent_user="now do B")
    plan = plan_compaction(history, 1500)
    assert any(m.content == "now do B" for m in plan.recent if isinstance(m, UserMessage))

    from lathe.words import load_words

    words = load_words()
    heading, asked = words.say("summary_heading"), words.say("request_heading")
    opening = compacted_history(plan, "S2", heading, (), asked)[0].content

    assert "fix bug A" not in opening and asked not in opening
