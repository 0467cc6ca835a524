"""read's "[... line cut: N characters in total]" and write's "read the rest first"
named no way to see the rest of a line read cannot show (read shows a line to its
2,000th character). Through the real CLI: each notice names a command that does.
"""

from __future__ import annotations

import re
import subprocess

from tests.e2e.test_run_edges import lathe_run
from tests.fakes.openai_server import Call, Reply


def _results(server) -> list[str]:
    last = server.chat_bodies()[-1]["messages"]
    return [m["content"] for m in last if m["role"] == "tool"]


def test_reads_and_writes_notices_for_a_long_line_name_a_way_to_see_it(tmp_path, fake_openai):
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "c.py").write_text("A = 1\nDATA = '" + "x" * 2500 + "END'\nB = 2\n")
    fake_openai.enqueue(
        Reply(calls=[Call("read", {"path": "c.py"})]),
        Reply(calls=[Call("write", {"path": "c.py", "content": "A = 1\nB = 3\n"})]),
        Reply("Stopped."),
    )
    done = lathe_run(fake_openai, ws, tmp_path, "--approval", "full", "Change it")
    assert done.returncode == 0, done.stderr
    read, write = _results(fake_openai)
    for notice in (read, write):
        command = re.search(r"`((?:sed|cut|head|tail) [^`]+)`", notice)
        assert command is not None, notice
        shown = subprocess.run(
            ["bash", "-c", command.group(1)], cwd=ws, capture_output=True, text=True
        ).stdout
        assert "END'" in shown, (notice, shown)
    assert "read the rest first" not in write
