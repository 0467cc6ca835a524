"""Real processes: a writer killed with SIGKILL, and two processes after one session."""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from tests.fakes.openai_server import Reply

from lathe.errors import UsageError
from lathe.session import MessageEntry, SessionStore
from lathe.types import UserMessage

APPENDER = """
import sys
from pathlib import Path
from lathe.session import SessionStore
from lathe.types import UserMessage

store = SessionStore(Path(sys.argv[1]))
session = store.create(Path(sys.argv[2]), "m")
print(session.id, flush=True)
n = 0
while True:
    # Entries of varying size so the kill lands inside a write now and then.
    session.append_message(UserMessage(content=f"entry {n} " + "x" * (n * 997 % 20000)))
    n += 1
"""

STARTER = """
import sys, time
from pathlib import Path
from lathe.session import SessionStore

# What the interactive face does at start: a new session, empty until the first message.
session = SessionStore(Path(sys.argv[1])).create(Path(sys.argv[2]), "m")
print(session.id, flush=True)
time.sleep(60)
"""

HOLDER = """
import sys, time
from pathlib import Path
from lathe.session import SessionStore

session = SessionStore(Path(sys.argv[1])).open(sys.argv[2])
print("locked", flush=True)
time.sleep(60)
"""


def _spawn(script: str, *args: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-c", script, *args], stdout=subprocess.PIPE, text=True
    )


@pytest.mark.parametrize("attempt", range(3))
def test_kill_9_mid_append_leaves_a_session_that_loads_and_resumes(
    store: SessionStore, home: Path, workspace: Path, attempt: int
) -> None:
    child = _spawn(APPENDER, str(home), str(workspace))
    assert child.stdout is not None
    session_id = child.stdout.readline().strip()
    time.sleep(random.uniform(0.05, 0.4))
    child.send_signal(signal.SIGKILL)
    child.wait()

    loaded = store.open(session_id, readonly=True)
    assert all("torn last line" in warning for warning in loaded.warnings)
    assert len(loaded.warnings) <= 1
    contents = [m.content for m in loaded.messages() if isinstance(m, UserMessage)]
    assert contents
    assert [text.split()[1] for text in contents] == [str(n) for n in range(len(contents))]

    with store.open(session_id) as resumed:
        assert resumed.leaf == loaded.leaf
        resumed.append(MessageEntry(message=loaded.messages()[0]))
    assert store.open(session_id, readonly=True).warnings == []


def test_second_appender_gets_an_error_naming_the_session_and_pid(
    store: SessionStore, home: Path, workspace: Path
) -> None:
    with store.create(workspace, "m") as session:
        pass
    holder = _spawn(HOLDER, str(home), session.id)
    try:
        assert holder.stdout is not None
        assert holder.stdout.readline().strip() == "locked"
        with pytest.raises(UsageError) as error:
            store.open(session.id[:4])
        assert f"session {session.id} is in use" in str(error.value)
        assert f"pid {holder.pid}" in str(error.value)
        assert store.open(session.id, readonly=True).id == session.id
    finally:
        holder.send_signal(signal.SIGKILL)
        holder.wait()

    # The kernel released the dead holder's lock.
    with store.open(session.id) as reopened:
        assert reopened.writable


def test_the_lock_is_released_on_close(store: SessionStore, workspace: Path) -> None:
    session = store.create(workspace, "m")
    with pytest.raises(UsageError, match=f"pid {os.getpid()}"):
        store.open(session.id)
    session.close()
    session.close()  # idempotent
    with store.open(session.id) as again:
        assert again.writable


def test_continue_passes_over_a_session_a_kill_left_empty(
    store: SessionStore, home: Path, workspace: Path, fake_openai
) -> None:
    # An interactive lathe killed before its first message (kill -9, the OOM killer, a
    # power cut) leaves a header-only session, newer than the real conversation:
    # `--continue` went on with it, and the conversation was silently dropped.
    fake_openai.enqueue(Reply("looked around"), Reply("going on"))
    _lathe_run("look around", home=home, workspace=workspace, base_url=fake_openai.base_url)
    child = _spawn(STARTER, str(home), str(workspace))
    assert child.stdout is not None
    empty = child.stdout.readline().strip()
    child.send_signal(signal.SIGKILL)
    child.wait()
    assert store.open(empty, readonly=True).entries == []

    _lathe_run("--continue", "go on", home=home, workspace=workspace, base_url=fake_openai.base_url)

    sent = [(m["role"], m["content"]) for m in fake_openai.chat_bodies()[-1]["messages"]]
    assert sent[1:] == [
        ("user", "look around"),
        ("assistant", "looked around"),
        ("user", "go on"),
    ]


def _lathe_run(*args: str, home: Path, workspace: Path, base_url: str) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("LATHE_", "OPENAI_"))}
    env.update({"OPENAI_API_KEY": "sk-test-sessions", "LATHE_HOME": str(home)})
    ran = subprocess.run(
        [sys.executable, "-m", "lathe", "run", "--json", "--model", "m", "--base-url", base_url,
         "-C", str(workspace), *args],
        env=env, capture_output=True, text=True, timeout=120, stdin=subprocess.DEVNULL,
    )  # fmt: skip
    assert ran.returncode == 0, ran.stderr
