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
from tests.e2e.test_context_window import too_long
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

    wide = ["-c", "models.m.provider=openai", "-c", "models.m.context_window=131072"]
    result = run(fake_openai, ws, tmp_path, *wide, "look at pkg")  # 21 KB fit its share

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


def test_instruction_files_are_held_to_a_share_of_a_small_window(tmp_path, fake_openai):
    ws = _repo(tmp_path)
    (ws / "AGENTS.md").write_text(_rules(900))  # 25 KB
    (ws / "a.py").write_text("a = 1\n")
    fake_openai.enqueue(Reply("Done."))

    result = run(
        fake_openai, ws, tmp_path, "-c", "models.m.provider=openai",
        "-c", "models.m.context_window=8192", "--profile", "small", "Fix a.py",
    )  # fmt: skip

    assert result.returncode == 0, result.stderr
    system = fake_openai.chat_bodies()[0]["messages"][0]["content"]
    kept = system[system.index("- Rule 0:") : system.index("[AGENTS.md is cut here")]
    assert 0 < len(kept.encode()) <= 8192 * 3 // 8  # an eighth, at 3 bytes a token
    assert len(system.encode()) < 8192 * 3 // 2  # half the window left for the work
    notice = next(line for line in result.stderr.splitlines() if "AGENTS.md was cut" in line)
    size = (ws / "AGENTS.md").stat().st_size
    assert f"after {len(kept.encode()):,} of its {size:,} bytes" in notice
    assert "8,192-token window" in notice and "context_window" in notice


def test_a_first_request_the_instruction_files_fill_names_them_not_the_task(tmp_path, fake_openai):
    ws = _repo(tmp_path)
    (ws / "AGENTS.md").write_text(_rules(700))  # 19 KB: within a 128k window's share
    fake_openai.enqueue(too_long(8192, 9000), too_long(8192, 9000))

    # The server's window is smaller than the one configured (or assumed).
    wide = ["-c", "models.m.provider=openai", "-c", "models.m.context_window=131072"]
    result = run(fake_openai, ws, tmp_path, *wide, "Fix a.py")

    assert result.returncode != 0
    said = result.stdout + result.stderr
    assert "first request does not fit" in said
    assert "the instruction files (AGENTS.md) about 6," in said
    assert "shorten the instruction files or lower memory.instructions_max_bytes" in said
    assert "smaller task message" not in said
