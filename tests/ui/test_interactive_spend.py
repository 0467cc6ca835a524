"""What the interactive session says it spent, driven for real in tmux against the fake
server: `/cost` and the footer count a subagent's replies as the run line and the
headless `run_finished` do, and spend whose price is unknown is never shown as $0."""

from __future__ import annotations

from typing import Any

from tests.fakes.openai_server import Call, FakeOpenAIServer, Reply


def _usage(prompt: int, completion: int) -> dict[str, int]:
    return {
        "prompt_tokens": prompt,
        "completion_tokens": completion,
        "total_tokens": prompt + completion,
    }


def _flat(screen: str) -> str:
    return " ".join(screen.split())  # a long line may wrap


def test_cost_and_the_footer_count_the_subagents_spend(
    launch, fake_openai: FakeOpenAIServer
) -> None:
    # The run line said 201.0k in, but /cost said "1,000 in" and "$0.0028": the
    # child's 200k tokens were left out.
    def answer(body: dict[str, Any]) -> Reply:
        opening = next(m["content"] for m in body["messages"] if m["role"] == "user")
        turns = sum(1 for m in body["messages"] if m["role"] == "assistant")
        if "[child]" in opening:
            return Reply("the child is done", usage=_usage(200_000, 20_000))
        if turns == 0:
            brief = {"description": "look", "prompt": "[child] read app.py"}
            return Reply(calls=[Call("task", brief)], usage=_usage(500, 50))
        return Reply("Parent done.", usage=_usage(500, 50))

    fake_openai.responder = answer
    term = launch("--approval", "auto", model="gpt-4.1")
    term.send("hand it to a subagent")
    term.wait_for(r"201\.0k in, 20\.1k out")
    # gpt-4.1: $2 a million in, $8 out: 0.402 + 0.1608
    term.wait_for(r"\$0\.5628")  # the footer
    term.send("/cost")
    screen = _flat(term.wait_for(r"this session so far"))
    assert "tokens: 201,000 in · 20,100 out" in screen, screen
    assert "cost: $0.5628" in screen, screen
    assert "this session so far: 201,000 in · 20,100 out" in screen, screen


def test_spend_of_an_unpriced_model_before_a_switch_is_unknown_not_free(
    launch, fake_openai: FakeOpenAIServer
) -> None:
    # After /model gpt-4.1, /cost said "cost: $0.0028": the first model's 1,100 tokens
    # had been counted as free.
    fake_openai.enqueue(
        Reply("First answer.", usage=_usage(1000, 100)),
        Reply("Second answer.", usage=_usage(1000, 100)),
    )
    term = launch()  # fake-model: no prices in the catalog
    term.send("first question")
    term.wait_for(r"First answer\.")
    term.send("/model gpt-4.1")
    term.wait_for(r"model: fake-model")
    term.send("second question")
    term.wait_for(r"Second answer\.")
    term.wait_for(r"\$0\.0028 \+ unpriced")  # the footer: not "$0.0028"
    term.send("/cost")
    screen = _flat(term.wait_for(r"this session so far"))
    assert "tokens: 2,000 in · 200 out" in screen, screen
    assert "cost: at least $0.0028" in screen, screen
    assert "no prices for fake-model" in screen, screen
