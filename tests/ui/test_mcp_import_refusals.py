"""`lathe mcp import` through the real command line refuses, in one line naming what is
wrong, what it cannot take as it is: a target file whose `mcp` settings are an inline
table (appending to it had made it invalid)."""

from __future__ import annotations

import json

import pytest
from tests.ui.test_mcp_cmd import lathe

NEW_SERVER = {"mcpServers": {"newsrv": {"command": "echo", "args": ["hi"]}}}


@pytest.mark.parametrize(
    "mine",
    [
        '[mcp]\nservers = { old = { command = "x" } }\n',
        "mcp = { schema_share = 0.2 }\n",
    ],
)
def test_a_config_with_an_inline_mcp_table_is_refused_and_left_as_it_was(tmp_path, mine):
    # "wrote 1 MCP server(s)" and exit 0, then every later command failed: "invalid
    # TOML: Cannot declare ('mcp', 'servers', 'newsrv') twice".
    gemini = tmp_path / "settings.json"
    gemini.write_text(json.dumps(NEW_SERVER))
    config = tmp_path / "config.toml"
    config.write_text(mine)

    result = lathe("mcp", "import", str(gemini), tmp_path=tmp_path)

    assert result.returncode == 2, result.stdout + result.stderr
    assert config.read_text() == mine
    [line] = result.stderr.splitlines()
    assert line.startswith(f"lathe: {config}: ") and "inline table" in line, line
    assert "[mcp.servers.NAME]" in line and "nothing was written" in line, line
    assert "wrote" not in result.stdout
    assert lathe("config", "show", tmp_path=tmp_path).returncode == 0
