"""`lathe mcp import` through the real command line refuses, in one line naming what is
wrong, what it cannot take as it is: a target file whose `mcp` settings are an inline
table (appending to it had made it invalid), and another agent's server whose fields
have the wrong shape (a traceback, or a wrong server written)."""

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


@pytest.mark.parametrize(
    ("name", "text", "said"),
    [
        # AttributeError: 'str' object has no attribute 'items'
        ("codex.toml", '[mcp_servers.a]\ncommand = "x"\nenv = "FOO=bar"\n', "server a: env "),
        ("settings.json", {"a": {"command": "x", "env": ["A=1"]}}, "server a: env "),
        ("settings.json", {"a": {"command": "x", "headers": "A: b"}}, "server a: headers "),
        # TypeError: argument of type 'int' is not iterable
        ("codex.toml", "[mcp_servers]\na = 1\n", "server a "),
        ("codex.toml", "mcp_servers = [1]\n", "mcp_servers "),
        ("settings.json", {"a": {"command": "x", "env": {"PORT": 8080}}}, "server a: env "),
        (
            "codex.toml",
            '[mcp_servers.a]\nurl = "https://x.example/mcp"\nhttp_headers = "A: b"\n',
            "server a: http_headers ",
        ),
        # Written as ["-", "-", "f", "l", "a", "g"]
        ("codex.toml", '[mcp_servers.a]\ncommand = "x"\nargs = "--flag"\n', "server a: args "),
        # Written as ["1", "2", "True"]
        ("codex.toml", '[mcp_servers.a]\ncommand = "x"\nargs = [1, 2, true]\n', "server a: args "),
        # Dropped without a word: the server got the default timeout.
        ("settings.json", {"a": {"command": "x", "timeout": "soon"}}, "server a: timeout "),
        ("settings.json", {"a": {"command": "x", "timeout": -5}}, "server a: timeout "),
        (
            "codex.toml",
            '[mcp_servers.a]\ncommand = "x"\nstartup_timeout_ms = "5s"\n',
            "server a: startup_timeout_ms ",
        ),
    ],
)
def test_a_server_with_a_field_of_the_wrong_shape_is_refused_naming_it(tmp_path, name, text, said):
    source = tmp_path / name
    source.write_text(text if isinstance(text, str) else json.dumps({"mcpServers": text}))
    config = tmp_path / "config.toml"
    config.write_text("# mine\n")

    result = lathe("mcp", "import", str(source), tmp_path=tmp_path)

    assert result.returncode == 2, result.stdout + result.stderr
    [line] = result.stderr.splitlines()
    assert line.startswith(f"lathe: {source}: ") and said in line, line
    assert "fix it there" in line, line
    assert config.read_text() == "# mine\n"


def test_args_and_timeouts_of_the_right_shape_are_imported(tmp_path):
    gemini = tmp_path / "settings.json"
    gemini.write_text(
        json.dumps({"mcpServers": {"a": {"command": "x", "args": ["--flag"], "timeout": 2500}}})
    )

    result = lathe("mcp", "import", str(gemini), tmp_path=tmp_path)

    assert result.returncode == 0, result.stderr
    written = (tmp_path / "config.toml").read_text()
    assert 'args = ["--flag"]' in written and "tool_timeout_s = 2.5" in written, written
