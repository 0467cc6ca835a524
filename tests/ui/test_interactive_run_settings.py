"""What the app records of each message's run in its session, for `lathe serve`'s resume
to keep: the approval mode and the check in effect then, as `lathe run` records them.
The app recorded none, so the service could only refuse to resume its sessions."""

from __future__ import annotations

from pathlib import Path

from tests.fakes.openai_server import FakeOpenAIServer, Reply

from lathe.session import SessionStore
from lathe.session.entries import last_model_change


def _settings(lathe_home: Path):
    [info] = SessionStore(lathe_home).list(None)
    session = SessionStore(lathe_home).open(info.id, readonly=True)
    change = last_model_change(session.branch())
    assert change is not None and change.settings is not None
    return change.settings


def test_each_run_of_the_app_records_the_approval_and_check_in_effect(
    launch, fake_openai: FakeOpenAIServer, lathe_home: Path
) -> None:
    fake_openai.enqueue(Reply("One."), Reply("Two."))
    term = launch("--approval", "read-only")
    term.send("first")
    term.wait_for(r"^One\.")
    first = _settings(lathe_home)
    assert (first.approval, first.verify) == ("read-only", None)
    term.send("/approval ask")
    term.wait_for(r"^approval: ask")
    term.send("/verify python -c pass")
    term.wait_for(r"verify")
    term.send("second")
    term.wait_for(r"^Two\.")
    second = _settings(lathe_home)
    assert (second.approval, second.verify) == ("ask", "python -c pass")
