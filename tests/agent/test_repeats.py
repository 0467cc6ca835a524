"""The repeat breaker: which replies count as the same attempt, and the temperature of
the requests that follow each."""

from __future__ import annotations

from lathe.agent.finish import RunState
from lathe.agent.repeats import RepeatBreaker, reply_signature
from lathe.llm.scripted import reply
from lathe.types import AssistantMessage, ToolCall


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


async def test_a_repeat_heats_the_next_requests_until_a_reply_is_new():
    breaker, run = RepeatBreaker(0.9), RunState(emit=lambda event: None)
    await breaker.begin(run)
    temperatures = []
    for text in ["a", "b", "a", "a", "c", "", "a"]:
        assert await breaker.after_reply(reply(text), run) is None  # it never decides
        temperatures.append(run.temperature)
    # An empty reply is no attempt: it leaves the temperature as it was.
    assert temperatures == [None, None, 0.9, 0.9, None, None, 0.9]
    await breaker.begin(run)  # a new run starts cool, with nothing seen
    await breaker.after_reply(reply("a"), run)
    assert run.temperature is None
