"""`lathe attach` given the API's URL (`.../v1`) instead of the server's: it said only
`lathe: Not Found (HTTP 404)`."""

from __future__ import annotations

import os
import sys

from tests.service.scripts import workspace_for
from tests.ui.tmux import Terminal


def test_attach_to_the_api_url_says_no_lathe_server_answered_and_gives_the_root_url(
    served, fake_openai, tmp_path
):
    ws = workspace_for(tmp_path, "ws")
    with served.client() as client:
        session = client.create_session(str(ws), model="m", base_url=fake_openai.base_url)
    env = {"PATH": os.environ["PATH"], "HOME": str(tmp_path), "TERM": "xterm-256color",
           "LANG": "C.UTF-8", "LATHE_HOME": str(served.home)}  # fmt: skip
    # The shell says how attach exited.
    argv = ["sh", "-c", '"$@"; echo "attach exited $?"', "sh",
            sys.executable, "-m", "lathe", "attach", f"{served.url}/v1", session.id]  # fmt: skip
    terminal = Terminal(argv, env=env, cwd=str(tmp_path), width=250, height=20)
    try:
        screen = terminal.wait_for(r"attach exited \d+", timeout=30)
    finally:
        terminal.close()
    assert "attach exited 0" not in screen, screen
    [said] = [line for line in screen.splitlines() if line.startswith("lathe: ")]
    assert "no lathe server answered" in said and f"{served.url}/v1" in said, said
    assert said.endswith(f"give its root URL: {served.url}"), said
