"""The prompt history holds every line typed (pasted keys, passwords typed at the wrong
prompt): it is the user's alone, as sessions are, whatever mode LATHE_HOME was made
with. It had been 0644 in a 0755 folder."""

from __future__ import annotations

import stat
from pathlib import Path

from tests.fakes.openai_server import FakeOpenAIServer, Reply


def _mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def _type_one_line(launch, fake_openai: FakeOpenAIServer) -> None:
    fake_openai.enqueue(Reply("Noted."))
    term = launch()
    term.send("my token is hunter2")
    term.wait_for(r"^Noted\.")
    term.keys("C-d")
    term.wait_exit()


def test_the_history_is_private_in_a_home_open_to_all(
    launch, fake_openai: FakeOpenAIServer, lathe_home: Path
) -> None:
    lathe_home.mkdir()
    lathe_home.chmod(0o755)
    _type_one_line(launch, fake_openai)
    [history] = (lathe_home / "history").iterdir()
    assert "hunter2" in history.read_text()
    assert (_mode(history.parent), _mode(history)) == (0o700, 0o600)
    assert _mode(lathe_home) == 0o755  # the folder the user made is theirs to set


def test_a_history_an_older_lathe_left_open_is_made_private(
    launch, fake_openai: FakeOpenAIServer, lathe_home: Path
) -> None:
    folder = lathe_home / "history"
    folder.mkdir(parents=True)
    folder.chmod(0o755)
    _type_one_line(launch, fake_openai)
    [history] = folder.iterdir()
    history.chmod(0o644)
    _type_one_line(launch, fake_openai)
    assert (_mode(folder), _mode(history)) == (0o700, 0o600)
