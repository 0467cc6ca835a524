"""The room instruction files take, through the real `lathe run` against the fake
OpenAI-compatible server (reproduced by a reviewer on main):

- a nested AGENTS.md appended to a `read` page went through the tool output cap with
  it: the page lost lines 238-381 to `[... 6,336 bytes omitted ...]`, with a 21 KB file
  read's own "call read with offset=598" too, and the file was sent a second time in
  the opening message;
- the instruction budget ignored the model's window: a 25 KB AGENTS.md filled an 8,192
  window, and the error blamed the task ("or a smaller task message"), never the file.
"""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest
from tests.e2e.test_instructions_and_memory import run
from tests.fakes.openai_server import Call, Reply


def _repo(tmp_path: Path) -> Path:
    ws = tmp_path / "ws"
    subprocess.run(["git", "init", "-q", str(ws)], check=True)
    (tmp_path / "config").mkdir()
    return ws


def _rules(count: int) -> str:
    return "".join(f"- Rule {i}: keep guard {i}.\n" for i in range(count))


@pytest.mark.parametrize("rules", [200, 740])  # 5.7 KB, 21 KB
def test_a_nested_file_follows_a_whole_read_page_and_is_sent_once(tmp_path, fake_openai, rules):
    ws = _repo(tmp_path)
    (ws / "pkg").mkdir()
    (ws / "pkg" / "AGENTS.md").write_text(_rules(rules))
    (ws / "pkg" / "big.py").write_text(
        "".join(f"x{i} = {i}  # some padding text here\n" for i in range(5000))
    )
    fake_openai.enqueue(Reply(calls=[Call("read", {"path": "pkg/big.py"})]), Reply("Done."))

    result = run(fake_openai, ws, tmp_path, "look at pkg")

    assert result.returncode == 0, result.stderr
    messages = fake_openai.chat_bodies()[1]["messages"]
    (page,) = [m["content"] for m in messages if m["role"] == "tool"]
    shown, instructions = page.split("\n\n[Instructions from pkg/AGENTS.md", 1)
    numbers = [int(n) for n in re.findall(r"^\s*(\d+)[\t│|:]", shown, re.MULTILINE)]
    assert numbers == list(range(1, len(numbers) + 1)) and len(numbers) > 500
    assert "omitted" not in page
    assert f"offset={numbers[-1] + 1}" in shown
    assert instructions.endswith(_rules(rules).strip())
    sent = "\n".join(str(m["content"]) for m in messages)
    assert sent.count(f"- Rule {rules - 1}: keep guard {rules - 1}.") == 1
    assert [m["content"] for m in messages if m["role"] == "user"] == ["look at pkg"]
