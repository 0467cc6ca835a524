"""The app goes on with the session `prepare` settled on (`setup.continued`), whose
settings it took: it looked the latest session up a second time (`Links.open_at_start`),
so another lathe writing to another session of the workspace meanwhile had the app go on
with that one under the first one's model, endpoint and approval."""

from __future__ import annotations

from pathlib import Path

from lathe.session import SessionStore
from lathe.types import AssistantMessage, UserMessage
from lathe.ui.interactive.links import Links
from lathe.ui.setup import Continued


def _session(store: SessionStore, workspace: Path, said: str) -> str:
    with store.create(workspace, "m") as session:
        session.append_message(UserMessage(content=said))
        session.append_message(AssistantMessage(text="Done."))
    return session.id


def test_the_app_opens_the_session_its_settings_came_from(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setenv("LATHE_HOME", str(tmp_path / "home"))
    workspace = tmp_path / "ws"
    workspace.mkdir()
    store = SessionStore(tmp_path / "home")
    settled = _session(store, workspace, "first")
    written_meanwhile = _session(store, workspace, "second")  # the latest one now
    assert store.latest(workspace, readonly=True).id == written_meanwhile
    links = Links(workspace, "m", "openai")

    history = links.open_at_start(None, True, continued=Continued(settled, {}))

    try:
        assert links.session.id == settled
        assert [m.content for m in history if isinstance(m, UserMessage)] == ["first"]
    finally:
        links.session.close()
