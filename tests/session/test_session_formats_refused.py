"""Session files `--continue`, `sessions list` and `show` cannot read, through the real
CLI against the fake server.

A hunt found: `--continue` went on with an older session, silently, when the newest
was in a newer format (header version 4 where this lathe writes 3), and said there was
"no earlier session in WS to continue" when that file was the only one; `--resume`,
`show` and `fork` said to upgrade. A header with version 0 (or negative) made
`sessions list` (every workspace's, with `--all`), `show` and `run --continue` end in a
traceback, `ValueError: no migration from session format version 0`.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from tests.fakes.openai_server import FakeOpenAIServer, Reply

from lathe.session import FORMAT_VERSION, SessionStore

from .cli_runs import lathe, one_line, only_session, rewrite_version, run, said
from .helpers import user


def test_continue_refuses_when_the_newest_session_is_from_a_newer_lathe(
    home: Path, workspace: Path, fake_openai: FakeOpenAIServer
) -> None:
    store = SessionStore(home)
    fake_openai.enqueue(Reply("done with the old task"), Reply("done with the new task"))
    assert run(home, workspace, fake_openai, "the old task").returncode == 0
    older = only_session(store, workspace)
    assert run(home, workspace, fake_openai, "the new task").returncode == 0
    [newer] = set(store.project_dir(workspace).glob("*.jsonl")) - {older}
    rewrite_version(newer, FORMAT_VERSION + 1)  # a newer lathe went on with it
    asked = len(fake_openai.chat_bodies())

    result = run(home, workspace, fake_openai, "--continue", "go on")

    assert result.returncode == 2
    line = one_line(result)
    assert f"format version {FORMAT_VERSION + 1}, newer than this lathe" in line
    assert "upgrade lathe" in line
    assert len(fake_openai.chat_bodies()) == asked  # the old conversation was not sent


def test_continue_names_the_upgrade_when_the_only_session_is_newer(
    home: Path, workspace: Path, fake_openai: FakeOpenAIServer
) -> None:
    fake_openai.enqueue(Reply("done"))
    assert run(home, workspace, fake_openai, "the task").returncode == 0
    rewrite_version(only_session(SessionStore(home), workspace), FORMAT_VERSION + 1)

    result = run(home, workspace, fake_openai, "--continue", "go on")

    assert result.returncode == 2
    line = one_line(result)
    assert "no earlier session" not in line
    assert f"format version {FORMAT_VERSION + 1}, newer than this lathe" in line
    assert "upgrade lathe" in line


def test_a_newer_file_older_than_the_latest_session_does_not_stop_continue(
    home: Path, workspace: Path
) -> None:
    store = SessionStore(home)
    with store.create(workspace, "m") as old:
        old.append_message(user("from a newer lathe, long ago"))
    rewrite_version(old.path, FORMAT_VERSION + 1)
    os.utime(old.path, (1_000_000_000, 1_000_000_000))
    with store.create(workspace, "m") as current:
        current.append_message(user("the task"))

    latest = store.latest(workspace, readonly=True)

    assert latest is not None and latest.id == current.id


def test_list_says_to_upgrade_for_a_newer_file(home: Path, workspace: Path) -> None:
    store = SessionStore(home)
    with store.create(workspace, "m") as session:
        session.append_message(user("the task"))
    rewrite_version(session.path, FORMAT_VERSION + 1)

    result = lathe(home, workspace, "sessions", "list")

    assert result.returncode == 0
    assert "Traceback" not in result.stderr
    [line] = [line for line in result.stderr.splitlines() if "left out" in line]
    assert line.startswith("lathe: warning: ")
    assert str(session.path) in line and "upgrade lathe" in line


@pytest.mark.parametrize("version", [0, -1, True])
def test_a_header_with_no_real_version_is_left_out_not_a_traceback(
    home: Path, workspace: Path, fake_openai: FakeOpenAIServer, version: object
) -> None:
    store = SessionStore(home)
    fake_openai.enqueue(Reply("done"))
    assert run(home, workspace, fake_openai, "the good task").returncode == 0
    good = only_session(store, workspace)
    with store.create(workspace, "m") as damaged:
        damaged.append_message(user("the damaged one"))
    rewrite_version(damaged.path, version)

    for args in (("sessions", "list"), ("sessions", "list", "--all")):
        listed = lathe(home, workspace, *args)
        assert listed.returncode == 0, listed.stderr
        warning = one_line(listed)
        assert f"left out {damaged.path}" in warning
        assert good.stem.rpartition("_")[2] in listed.stdout
        assert damaged.id not in listed.stdout

    shown = lathe(home, workspace, "sessions", "show", damaged.id)
    assert shown.returncode == 2
    assert damaged.id in one_line(shown) and "version" in one_line(shown)

    fake_openai.enqueue(Reply("went on"))
    went_on = run(home, workspace, fake_openai, "--continue", "go on")
    assert went_on.returncode == 0, went_on.stderr
    assert "the good task" in said(fake_openai)
