"""The interactive session with a run budget, driven for real in tmux against the fake
server: the footer shows what the run spent against the budget, and a message's run
that reaches it stops `out_of_budget` while the session goes on."""

from __future__ import annotations

from tests.fakes.openai_server import Call, FakeOpenAIServer, Reply

# 1,200 tokens a reply.
USAGE = {"prompt_tokens": 1000, "completion_tokens": 200, "total_tokens": 1200}


def test_the_footer_shows_the_spend_against_the_budget_and_a_run_stops_at_it(
    launch, fake_openai: FakeOpenAIServer
) -> None:
    fake_openai.enqueue(
        Reply("Reading.", calls=[Call("read", {"path": "app.py"})], usage=USAGE),
        Reply("It subtracts.", usage=USAGE),
    )
    term = launch("--max-tokens", "5k")
    term.send("what does add do?")
    term.wait_for(r"It subtracts\.")
    term.wait_for(r"run: 2\.4k of 5k tokens")

    fake_openai.enqueue(
        *[
            Reply(calls=[Call(name, arguments)], usage=USAGE)
            for name, arguments in [
                ("read", {"path": "app.py"}),
                ("grep", {"pattern": "add"}),
                ("ls", {}),
                ("glob", {"pattern": "*.py"}),
                ("read", {"path": "app.py", "offset": 2}),
            ]
        ],
        Reply("Never sent.", usage=USAGE),
    )
    term.send("look around")
    screen = term.wait_for(r"out_of_budget · 5 turn")
    reason = "the token budget (5,000) was reached: 6,000 tokens used"
    assert reason in " ".join(screen.split())  # the line may wrap
    term.wait_for(r"run: 6k of 5k tokens")
    assert fake_openai.remaining == 1  # the budget stopped the sixth request

    term.send("thanks")
    term.wait_for(r"Never sent\.")  # a new message is a new run, with the whole budget
    term.wait_for(r"run: 1\.2k of 5k tokens")
