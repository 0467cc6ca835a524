"""Config files as editors leave them, and errors that name the file to fix.

Reproduced on landed main: a config file saved with a UTF-8 byte order mark (as some
Windows editors write it) was refused as "invalid TOML ... at line 1, column 1", where
instruction files and SKILL.md accept one.
"""

from __future__ import annotations

from pathlib import Path

from tests.config.test_config_errors import error_of
from tests.config.test_project_trust import _project, lathe

from lathe.config import load_config

BOM = b"\xef\xbb\xbf"


def test_a_project_file_with_a_byte_order_mark_is_read(tmp_path: Path) -> None:
    ws = _project(tmp_path, "")
    (ws / ".lathe" / "config.toml").write_bytes(BOM + b"[agent]\nmax_turns = 5\n")

    shown = lathe("config", "show", "-C", str(ws), cwd=tmp_path, home=tmp_path / "home")

    assert shown.returncode == 0, shown.stderr
    assert "max_turns = 5" in shown.stdout


def test_a_user_file_with_a_byte_order_mark_is_read(workspace: Path, user_file: Path) -> None:
    user_file.write_bytes(BOM + b'model = "gpt-4o"\n[agent]\nmax_turns = 7\n')

    loaded = load_config(workspace)

    assert loaded.config.agent.max_turns == 7
    assert loaded.config.model == "gpt-4o"


def test_a_byte_order_mark_anywhere_else_is_still_invalid(workspace: Path, user_file: Path) -> None:
    user_file.write_bytes(b"[agent]\n" + BOM + b"max_turns = 7\n")

    assert error_of(workspace).startswith(f"{user_file}: invalid TOML: ")
