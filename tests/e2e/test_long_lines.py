"""A line longer than a tool shows can still be seen, through the real CLI: grep shows
the part of a long line around the match, and every cut notice names a command that
shows the rest. grep's match at column 2.5M of a minified file showed the first 400
columns; bash's notice for a long one-line output sent the model to read(offset=1) and
grep, neither of which showed the omitted part.
"""

from __future__ import annotations

import re
import subprocess

from tests.e2e.test_run_edges import lathe_run
from tests.fakes.openai_server import Call, Reply


def _results(server) -> list[str]:
    last = server.chat_bodies()[-1]["messages"]
    return [m["content"] for m in last if m["role"] == "tool"]


def _bash(command: str, cwd) -> bytes:
    return subprocess.run(["bash", "-c", command], cwd=cwd, capture_output=True).stdout


def test_grep_shows_a_long_lines_match_and_how_to_see_more(tmp_path, fake_openai):
    ws = tmp_path / "ws"
    ws.mkdir()
    code = "".join(f"var a{n}=function(){{return {n}}};" for n in range(30_000))
    (ws / "min.js").write_text(code[:500_000] + "NEEDLE_TARGET=1;" + code[500_000:] + "\n")
    (ws / "short.js").write_text("const NEEDLE_TARGET = 2;\n")
    fake_openai.enqueue(Reply(calls=[Call("grep", {"pattern": "NEEDLE_TARGET"})]), Reply("Found."))
    done = lathe_run(fake_openai, ws, tmp_path, "--approval", "full", "Find the needle")
    assert done.returncode == 0, done.stderr
    (result,) = _results(fake_openai)

    lines = dict(line.split(":1:", 1) for line in result.split("\n\n")[0].splitlines())
    assert lines["short.js"] == "const NEEDLE_TARGET = 2;"
    window = lines["min.js"]
    assert window.startswith("[...]") and window.endswith("[...]")
    assert code[500_000 - 100 : 500_000] + "NEEDLE_TARGET=1;" + code[500_000:500_100] in window
    assert len(window) < 400

    command = re.search(r"`(sed [^`]+)`", result).group(1)
    shown = _bash(command, ws).decode()
    assert "NEEDLE_TARGET=1;" in shown
    assert len(shown) > 3000  # more than the window: the way to see the rest of the line


def test_bashs_notice_for_a_long_line_names_a_command_that_shows_the_omitted_part(
    tmp_path, fake_openai
):
    ws = tmp_path / "ws"
    ws.mkdir()
    script = "print(''.join('item%d,' % n for n in range(100000)))"
    fake_openai.enqueue(
        Reply(calls=[Call("bash", {"command": f'python3 -c "{script}"'})]), Reply("Done.")
    )
    done = lathe_run(fake_openai, ws, tmp_path, "--approval", "full", "Print the items")
    assert done.returncode == 0, done.stderr
    (result,) = _results(fake_openai)

    head = result.split("\n[... ")[0]
    assert "offset=1)" not in result  # read shows line 1 only to its 2,000th character
    command = re.search(r"`(tail -c [^`]+)`", result).group(1)
    shown = _bash(command, ws).decode()
    whole = "".join(f"item{n}," for n in range(100000))
    assert len(shown) > 10_000
    assert whole.startswith(head + shown)  # the part right after the head, where the cut is
