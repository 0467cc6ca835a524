"""`lathe attach` to a session that stops being served while attached: it had kept the
prompt open, sent each typed line into a 404, and on Ctrl-D said "the session goes on"
with an attach command that could only fail."""

from __future__ import annotations

import os
import sys

from tests.service.scripts import workspace_for
from tests.ui.tmux import Terminal


def attached(served, fake_openai, tmp_path, url: str | None = None):
    """A new session of `served` (in a workspace `ws`), and a terminal running `lathe
    attach` to it at `url` (the server's own by default), then saying how it exited
    (tmux does not always reap it to tell)."""
    ws = workspace_for(tmp_path, "ws")
    with served.client() as client:
        session = client.create_session(str(ws), model="m", base_url=fake_openai.base_url)
    env = {"PATH": os.environ["PATH"], "HOME": str(tmp_path), "TERM": "xterm-256color",
           "LANG": "C.UTF-8", "LATHE_HOME": str(served.home)}  # fmt: skip
    argv = ["sh", "-c", '"$@"; echo "attach exited $?"', "sh",
            sys.executable, "-m", "lathe", "attach", url or served.url, session.id]  # fmt: skip
    return ws, session, Terminal(argv, env=env, cwd=str(tmp_path), width=250, height=30)


def test_attach_ends_saying_how_to_serve_the_session_again_when_it_is_stopped(
    served, fake_openai, tmp_path
):
    ws, session, terminal = attached(served, fake_openai, tmp_path)
    try:
        terminal.wait_for(rf"attached to {session.id}", timeout=20)
        terminal.wait_for(r"^>\s*$", timeout=20)
        with served.client() as client:
            client.delete(session.id)
        screen = terminal.wait_for(r"lathe: session .* no longer served", timeout=30)
        screen = terminal.wait_for(r"attach exited \d+", timeout=20)
    finally:
        terminal.close()
    assert "attach exited 0" not in screen, screen
    assert "the session goes on" not in screen, screen
    [said] = [line for line in screen.splitlines() if line.startswith("lathe: ")]
    assert session.id in said and f"/v1/sessions/{session.id}/resume" in said, said
    assert f"lathe -C {ws} --resume {session.id}" in said, said
    with served.client() as client:  # what it advises brings the session back
        assert client.resume(session.id).id == session.id
