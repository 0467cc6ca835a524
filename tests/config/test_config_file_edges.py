"""Config files as editors leave them, and errors that name the file to fix.

Reproduced on landed main: a config file saved with a UTF-8 byte order mark (as some
Windows editors write it) was refused as "invalid TOML ... at line 1, column 1", where
instruction files and SKILL.md accept one; and an MCP server name the schema refuses was
reported as `mcp.servers: ...` with no file, since the defaults' empty `mcp.servers`
table was blamed for it.
"""

from __future__ import annotations

from pathlib import Path

import pytest
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


def test_a_bad_mcp_server_name_in_a_project_file_names_the_file(tmp_path: Path) -> None:
    ws = _project(tmp_path, '[mcp.servers."a b"]\ncommand = "x"\n')
    file = ws / ".lathe" / "config.toml"

    shown = lathe("config", "show", "-C", str(ws), cwd=tmp_path, home=tmp_path / "home")

    assert shown.returncode == 2
    assert shown.stderr.startswith(f"lathe: {file}: mcp.servers: server name 'a b' must be ")


@pytest.mark.parametrize("where", ["user", "project"])
def test_a_bad_mcp_server_name_is_blamed_on_the_file_that_declares_it(
    workspace: Path, user_file: Path, project_file: Path, where: str
) -> None:
    bad, good = '[mcp.servers."a b"]\ncommand = "x"\n', "[mcp.servers.ok]\ncommand = 'x'\n"
    if where == "user":
        user_file.write_text(bad)
    else:
        user_file.write_text(good)
        project_file.write_text(bad)
    file = user_file if where == "user" else project_file

    assert error_of(workspace).startswith(f"{file}: mcp.servers: server name 'a b' must be ")
