"""A template set (a profile's `prompts = "/path"`) holding a file lathe cannot read
stops the run with one `lathe: prompts '...': NAME.md ...` line (exit 2), as a template
with an unknown placeholder does: a system.md that is not UTF-8, a folder named
system.md and a nudge.md linking to nothing each ended in a traceback."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest


def _lathe(tmp_path: Path, base_url: str, prompts: Path) -> subprocess.CompletedProcess:
    config = tmp_path / "config.toml"
    config.write_text(f'[profiles.default]\nprompts = "{prompts}"\n')
    ws = tmp_path / "ws"
    ws.mkdir()
    env = {k: v for k, v in os.environ.items() if not k.startswith(("LATHE_", "OPENAI_"))}
    env.update({
        "OPENAI_API_KEY": "sk-test", "LATHE_HOME": str(tmp_path / "home"),
        "LATHE_CONFIG": str(config),
    })  # fmt: skip
    return subprocess.run(
        [sys.executable, "-m", "lathe", "run", "--model", "m", "--base-url", base_url,
         "-C", str(ws), "hi"],
        env=env, capture_output=True, text=True, timeout=120, stdin=subprocess.DEVNULL,
    )  # fmt: skip


def _not_utf8(folder: Path) -> None:
    (folder / "system.md").write_bytes(b"You are \xff\xfe an agent.\n")


def _a_folder(folder: Path) -> None:
    (folder / "system.md").mkdir()


def _a_link_to_nothing(folder: Path) -> None:
    (folder / "nudge.md").symlink_to(folder / "gone.md")


@pytest.mark.parametrize(
    ("make", "said"),
    [
        (_not_utf8, "system.md cannot be read: it is not UTF-8 text (byte 0xff at 8)"),
        (_a_folder, "system.md cannot be read: it is a folder"),
        (_a_link_to_nothing, "nudge.md cannot be read: it is a link to nothing"),
    ],
)
def test_a_template_lathe_cannot_read_is_one_line(tmp_path, fake_openai, make, said):
    prompts = tmp_path / "prompts"
    prompts.mkdir()
    make(prompts)

    result = _lathe(tmp_path, fake_openai.base_url, prompts)

    assert result.returncode == 2, result.stderr
    assert "Traceback" not in result.stderr
    assert result.stderr.strip().splitlines()[-1] == f"lathe: prompts '{prompts}': {said}"
    assert fake_openai.chat_bodies() == []
