"""`lathe attach` and lines starting with `/`: after a message the provider refused it
suggested `/clear`, which attach does not have, and `/clear` (like any `/word` it does
not know) went to the model as a message, the unanswered one glued to it."""

from __future__ import annotations

import os
import sys

from tests.fakes.openai_server import Reply, unauthorized
from tests.service.scripts import workspace_for
from tests.ui.tmux import Terminal


def test_attach_suggests_no_command_it_lacks_and_refuses_an_unknown_one(
    served, fake_openai, tmp_path
):
    ws = workspace_for(tmp_path, "ws")
    fake_openai.enqueue(unauthorized(), Reply("both seen"))
    with served.client() as client:
        session = client.create_session(str(ws), model="m", base_url=fake_openai.base_url)
    env = {"PATH": os.environ["PATH"], "HOME": str(tmp_path), "TERM": "xterm-256color",
           "LANG": "C.UTF-8", "LATHE_HOME": str(served.home)}  # fmt: skip
    argv = [sys.executable, "-m", "lathe", "attach", served.url, session.id]
    terminal = Terminal(argv, env=env, cwd=str(tmp_path), width=200, height=40)
    try:
        terminal.wait_for(rf"attached to {session.id}", timeout=20)
        terminal.send("first try")
        screen = terminal.wait_for(r"your message got no answer", timeout=30)
        assert "/clear" not in screen, screen
        terminal.send("/clear")
        terminal.wait_for(r"unknown command /clear[^>]*/abort", timeout=20)  # what it has
        terminal.send("/abort now")
        terminal.wait_for(r"/abort takes no arguments", timeout=20)
        terminal.send("//etc/hosts is fine")
        terminal.wait_for(r"both seen", timeout=30)
    finally:
        terminal.close()
    sent = "\n".join(
        m["content"] for m in fake_openai.chat_bodies()[-1]["messages"] if m["role"] == "user"
    )
    # The refused lines never reached the model; `//` sends a line starting with `/`.
    assert "/clear" not in sent and "/abort" not in sent, sent
    assert sent.startswith("first try") and sent.endswith("\n/etc/hosts is fine"), sent
