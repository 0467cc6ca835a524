"""An edit whose old_string ends inside a word, in a 5 MB one-line file, was refused
with "e.g. the whole line: `...`" quoting all 5 MB (the output cap then cut it to
~26 KB and spilled it); edit's quoted text is cut at 2,000 characters. Through the
real CLI.
"""

from __future__ import annotations

import re

from tests.e2e.test_run_edges import lathe_run
from tests.fakes.openai_server import Call, Reply


def _results(server) -> list[str]:
    last = server.chat_bodies()[-1]["messages"]
    return [m["content"] for m in last if m["role"] == "tool"]


def test_an_edit_refused_inside_a_word_of_a_long_line_quotes_at_most_2000_characters(
    tmp_path, fake_openai
):
    ws = tmp_path / "ws"
    ws.mkdir()
    line = "".join(f"var value{n}=compute{n}(a,b);" for n in range(20_000))
    (ws / "min.js").write_text(line + "\n")
    fake_openai.enqueue(
        Reply(
            calls=[
                Call(
                    "edit",
                    {
                        "path": "min.js",
                        "old_string": "value7777=compute777",
                        "new_string": "value7777=computeX",
                    },
                )
            ]
        ),
        Reply("Stopped."),
    )
    done = lathe_run(fake_openai, ws, tmp_path, "--approval", "full", "Change it")
    assert done.returncode == 0, done.stderr
    (refusal,) = _results(fake_openai)
    assert "inside the word `compute7777`" in refusal
    assert len(refusal) < 2_600
    quoted = re.search(r"`([^`]*value7777=compute7777[^`]*)`", refusal)
    assert quoted is not None, refusal  # a quote to copy still holds the word
    assert quoted.group(1) in line
