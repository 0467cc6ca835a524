"""`/resume` alone, driven for real in tmux: it goes on with the newest other session it
can open. It had taken the newest one even when another lathe had it open, and failed."""

from __future__ import annotations

from tests.fakes.openai_server import FakeOpenAIServer, Reply


def test_resume_alone_passes_over_a_session_open_in_another_lathe(
    launch, fake_openai: FakeOpenAIServer
) -> None:
    fake_openai.enqueue(Reply("Old answer."), Reply("Busy answer."), Reply("Back in the old."))
    done = launch()
    done.send("the old question")
    done.wait_for(r"^Old answer\.")
    done.keys("C-d")
    done.wait_exit()
    busy = launch()
    busy.send("the busy question")
    busy.wait_for(r"^Busy answer\.")

    term = launch()
    term.send("/resume")
    screen = term.wait_for(r"^session \w+ · \d+ messages")
    assert "in use by another lathe" not in screen, screen
    term.wait_for(r"── now ──\s*^> ")  # the prompt is back: what is typed before it is cooked
    term.send("go on")
    term.wait_for(r"^Back in the old\.")
    users = [m["content"] for m in fake_openai.chat_bodies()[-1]["messages"] if m["role"] == "user"]
    assert users[0] == "the old question" and users[-1] == "go on", users
