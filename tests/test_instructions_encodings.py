"""An instruction file is read as the file tools read text (`tools.files.decode_text`):
a UTF-16 AGENTS.md (what PowerShell's `echo > AGENTS.md` writes) or one with a UTF-8
BOM reaches the model as its words, and a binary one is skipped with a notice that
`lathe memory show` repeats. Both went into the system prompt as NUL bytes and U+FFFD,
unsaid."""

from __future__ import annotations

import codecs
import subprocess
from pathlib import Path

import pytest
from tests.e2e.test_instructions_and_memory import lathe, run
from tests.fakes.openai_server import Reply

from lathe.instructions import Instructions

WORDS = "Run `make check` before you finish.\r\nNever edit generated.py — it is built.\r\n"


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    repo = tmp_path / "repo"
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    (tmp_path / "config").mkdir()
    return repo


@pytest.mark.parametrize(
    "data",
    [
        codecs.BOM_UTF16_LE + WORDS.encode("utf-16-le"),
        codecs.BOM_UTF16_BE + WORDS.encode("utf-16-be"),
        codecs.BOM_UTF8 + WORDS.encode(),
    ],
    ids=["utf-16-le", "utf-16-be", "utf-8-bom"],
)
def test_a_utf16_or_bom_instruction_file_reaches_the_model_as_text(tmp_path, ws, fake_openai, data):
    (ws / "AGENTS.md").write_bytes(data)
    fake_openai.enqueue(Reply("Done."))

    done = run(fake_openai, ws, tmp_path, "Look")

    assert done.returncode == 0, done.stderr
    system = fake_openai.chat_bodies()[0]["messages"][0]["content"]
    assert "----- AGENTS.md -----\n" + WORDS.replace("\r\n", "\n").strip() in system
    assert "\x00" not in system and "\ufffd" not in system and "\ufeff" not in system


def test_a_binary_instruction_file_is_skipped_with_a_notice(tmp_path, ws, fake_openai):
    (ws / "AGENTS.md").write_bytes(b"\x7fELF\x02\x01\x01\x00" + bytes(range(256)) * 8)
    (ws / "CLAUDE.md").write_text("CLAUDE: use tabs.\n")
    fake_openai.enqueue(Reply("Done."))

    done = run(fake_openai, ws, tmp_path, "Look")
    shown = lathe(tmp_path, "memory", "show", "-C", str(ws))

    assert done.returncode == 0, done.stderr
    system = fake_openai.chat_bodies()[0]["messages"][0]["content"]
    assert "ELF" not in system and "\ufffd" not in system
    assert "CLAUDE: use tabs." in system  # the folder's next file, as for a bad link
    said = "AGENTS.md skipped: it is not text (a binary file?)"
    assert said in done.stderr
    assert shown.returncode == 0, shown.stderr
    assert said in shown.stdout


def test_a_utf16_file_past_the_budget_is_cut_and_says_so(tmp_path):
    (tmp_path / "AGENTS.md").write_bytes(
        codecs.BOM_UTF16_LE + "".join(f"line {n}\n" for n in range(100)).encode("utf-16-le")
    )

    found = Instructions(tmp_path, max_bytes=100)
    [taken] = found.standing()

    assert taken.cut and taken.text.startswith("line 0\nline 1\n")
    assert "\x00" not in taken.text
    assert "AGENTS.md was cut after" in found.notes[0]


def test_a_read_stopping_inside_a_character_keeps_the_text_utf8(tmp_path):
    # The budget's read (404 bytes) ended after 3 of an emoji's 4 bytes: those stray
    # bytes made the whole file read as cp1252, the "—" above shown as "â€”".
    line = "Use the — dash.\n"  # 18 bytes, then 383 of ASCII, then the emojis at 401
    (tmp_path / "AGENTS.md").write_text(line + ("x" * 10 + "\n") * 34 + "y" * 8 + "\n" + "😀" * 50)

    found = Instructions(tmp_path, max_bytes=200)
    [taken] = found.standing()

    assert taken.cut and taken.text.startswith(line + "xxxxxxxxxx\n")
    assert "â" not in taken.text
