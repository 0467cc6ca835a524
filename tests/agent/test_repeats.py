"""The repeat breaker: which replies count as the same attempt, which repeats it takes
over, and the temperature of the requests that follow each."""

from __future__ import annotations

import pytest

from lathe.agent.finish import CallRecord, RunState
from lathe.agent.repeats import RepeatBreaker, reply_signature
from lathe.llm.scripted import reply
from lathe.tools.base import ToolOutput
from lathe.tools.bash import BashTool
from lathe.tools.edit import EditTool
from lathe.tools.read import ReadTool
from lathe.types import AssistantMessage, StopReason, ToolCall, ToolResultMessage
from lathe.words import load_words


def _call(arguments: str) -> AssistantMessage:
    return AssistantMessage(tool_calls=(ToolCall(id="c", name="edit", arguments=arguments),))


def test_the_same_call_is_the_same_attempt_however_its_json_is_spaced():
    assert reply_signature(_call('{"path": "a.py", "n": 1}')) == reply_signature(
        _call('{"n":1,"path":"a.py"}')
    )
    assert reply_signature(_call('{"path": "a.py"}')) != reply_signature(_call('{"path": "b.py"}'))


def test_code_blocks_decide_when_there_are_no_calls_and_words_when_there_is_no_code():
    code = "```python\nx = 1\n```"
    assert reply_signature(reply(f"Fixed:\n{code}")) == reply_signature(reply(f"Again:\n{code}"))
    assert reply_signature(reply("I  fixed\nit.")) == reply_signature(reply("I fixed it."))
    assert reply_signature(reply("I fixed it.")) != reply_signature(reply("It is fixed."))
    assert reply_signature(reply("")) == ""


def _breaker(takeovers: int = 2) -> tuple[RepeatBreaker, RunState]:
    tools = {tool.name: tool for tool in (EditTool(), ReadTool(), BashTool())}
    breaker = RepeatBreaker(0.9, load_words(), tools.get, takeovers)
    return breaker, RunState(emit=lambda event: None)


async def test_repeats_are_taken_over_twice_then_left_to_the_others_and_sampled_hot():
    breaker, run = _breaker()
    await breaker.begin(run)
    seen = []
    for text in ["a", "b", "a", "a", "a", "c", "", "b"]:
        decision = await breaker.after_reply(reply(text), run)
        seen.append((type(decision).__name__ if decision else None, run.temperature))
    assert seen == [
        (None, None), (None, None),
        ("ContinueWith", 0.9), ("ContinueWith", 0.9),  # told, not checked again
        (None, 0.9),  # the third: the gate and the stall rules count it, as before
        (None, None),
        (None, None),  # an empty reply is no attempt: the temperature stays as it was
        (None, 0.9),
    ]  # fmt: skip
    await breaker.begin(run)  # a new run starts cool, with nothing seen
    assert await breaker.after_reply(reply("a"), run) is None and run.temperature is None


async def test_a_repeated_call_is_answered_not_run():
    breaker, run = _breaker()
    await breaker.begin(run)
    edit = _call('{"path": "a.py"}')
    await breaker.after_reply(edit, run)

    decision = await breaker.after_reply(edit, run)

    [result] = decision.messages
    assert isinstance(result, ToolResultMessage) and result.is_error
    assert result.tool_call_id == "c" and "repeats one you sent before" in result.content


async def test_a_repeated_read_or_test_run_runs_and_only_heats_the_next_sample():
    breaker, run = _breaker()
    await breaker.begin(run)
    for name in ("read", "bash"):
        call = AssistantMessage(tool_calls=(ToolCall(id=name, name=name, arguments="{}"),))
        await breaker.after_reply(call, run)
        assert await breaker.after_reply(call, run) is None  # its output may differ now
        assert run.temperature == 0.9


@pytest.mark.parametrize("tool", [EditTool(), BashTool()])
async def test_a_call_that_may_have_changed_a_file_makes_the_same_reply_new(tool):
    breaker, run = _breaker()
    await breaker.begin(run)
    await breaker.after_reply(reply("try it"), run)
    ran = CallRecord(
        call=ToolCall(id="x", name=tool.name, arguments="{}"),
        tool=tool,
        arguments={},
        output=ToolOutput(content="ok"),
    )
    await breaker.after_calls([ran], run, by_lathe=False)

    assert await breaker.after_reply(reply("try it"), run) is None
    assert run.temperature is None


async def test_a_read_or_a_failed_edit_in_between_changes_nothing():
    breaker, run = _breaker()
    await breaker.begin(run)
    await breaker.after_reply(reply("try it"), run)
    call = ToolCall(id="x", name="edit", arguments="{}")
    failed = CallRecord(call, EditTool(), {}, ToolOutput(content="not found", is_error=True))
    read = CallRecord(call, ReadTool(), {}, ToolOutput(content="text"))
    await breaker.after_calls([failed, read], run, by_lathe=False)

    assert await breaker.after_reply(reply("try it"), run) is not None


async def test_a_cut_off_or_unreadable_reply_is_left_to_its_own_handler():
    breaker, run = _breaker()
    await breaker.begin(run)
    for stop in (StopReason.MAX_TOKENS, StopReason.UNREADABLE):
        cut = AssistantMessage(text="partial", stop_reason=stop)
        assert [await breaker.after_reply(cut, run) for _ in range(3)] == [None] * 3
