"""A reply whose stream fails on its last attempt, driven for real in tmux against the
fake server: what it had said is not shown as if it were the answer."""

from __future__ import annotations

from tests.fakes.openai_server import FakeOpenAIServer, Reply


def test_the_text_of_a_failed_last_attempt_is_marked_cut_off(
    launch, fake_openai: FakeOpenAIServer
) -> None:
    # Each retry said the attempt's text was cut off; the last attempt's was printed as
    # a plain line above the provider_error, as if the model had answered that.
    fake_openai.responder = lambda body: Reply(
        "partial answer here and more", error_after=3, error="overloaded mid"
    )
    term = launch("-c", "retry.max_attempts=2", "-c", "retry.base_delay_s=0")
    term.send("answer me")
    screen = term.wait_for(r"^provider_error · ")
    last = screen.split("retry 1/2")[-1].split("provider_error · ")[0]
    assert "partial" in last, screen  # the person sees what it said before failing ...
    assert "cut off" in last.split("partial", 1)[1], screen  # ... and that it was cut off
