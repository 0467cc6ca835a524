"""Declared MCP servers: where each comes from, and that a project's start only once
trusted, the trust tied to what the project file sets for them."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from lathe.config import load_config
from lathe.errors import UsageError
from lathe.mcptools.servers import declared_servers, expanded
from lathe.policy.rules import RuleSet

SERVER = '[mcp.servers.{name}]\ncommand = "{command}"\n'


def _declared(workspace: Path, home: Path, **kwargs):
    return declared_servers(load_config(workspace), workspace, home=home, **kwargs)


def test_user_servers_are_trusted_and_project_servers_wait_for_trust(
    workspace, user_file, tmp_path
):
    user_file.write_text(SERVER.format(name="mine", command="mine-server"))
    (workspace / ".lathe").mkdir(exist_ok=True)
    project = workspace / ".lathe" / "config.toml"
    project.write_text(SERVER.format(name="theirs", command="their-server"))
    home = tmp_path / "home"

    first = _declared(workspace, home)

    assert [(e.name, e.from_project, e.trusted) for e in first.entries] == [
        ("mine", False, True),
        ("theirs", True, False),
    ]
    assert first.entries[1].origin == f"project file {project.resolve()}"
    assert [e.name for e in first.runnable()] == ["mine"]
    assert len(first.notices) == 1 and "theirs" in first.notices[0]
    assert "--trust-project-mcp" in first.notices[0] and "#mcp" not in first.notices[0]

    asked = []
    _declared(workspace, home, ask=lambda settings: asked.append(settings) or True)
    assert asked[0].keys == ["mcp.servers.theirs"]
    assert _declared(workspace, home).entries[1].trusted  # remembered

    project.write_text(SERVER.format(name="theirs", command="another-server"))
    assert not _declared(workspace, home).entries[1].trusted  # a change asks again


def test_an_mcp_json_server_and_the_user_wide_trust(workspace, user_file, tmp_path):
    (workspace / ".mcp.json").write_text(
        json.dumps({"mcpServers": {"web": {"type": "sse", "url": "http://127.0.0.1:9/sse"}}})
    )
    home = tmp_path / "home"
    [entry] = _declared(workspace, home).entries
    assert (entry.transport, entry.trusted) == ("sse", False)
    assert entry.origin.startswith(".mcp.json ")

    user_file.write_text("[mcp]\ntrust_project_servers = true\n")
    assert _declared(workspace, home).entries[0].trusted
    # ...but a project file cannot trust itself.
    user_file.write_text("")
    (workspace / ".lathe").mkdir(exist_ok=True)
    (workspace / ".lathe" / "config.toml").write_text("[mcp]\ntrust_project_servers = true\n")
    assert not _declared(workspace, home).entries[0].trusted


def test_a_broken_mcp_json_is_one_usage_error(workspace, tmp_path):
    (workspace / ".mcp.json").write_text('{"mcpServers": {"x": {"args": []}}}')
    with pytest.raises(UsageError, match=r"\.mcp\.json: mcpServers\.x: .*command .* url"):
        _declared(workspace, tmp_path / "home")


def test_secrets_in_server_settings_are_references_expanded_at_start(user_file, workspace):
    user_file.write_text(
        '[mcp.servers.gh]\ncommand = "gh-server"\n'
        'env = { TOKEN = "ghp_abcdefghijklmnopqrstuvwxyz012345" }\n'
    )
    with pytest.raises(UsageError, match=r"TOKEN.*looks like it holds a secret"):
        load_config(workspace)
    assert expanded("Bearer ${T}", {"T": "abc"}, server="gh") == "Bearer abc"
    with pytest.raises(UsageError, match=r"MCP server gh: \$\{T\} is not set"):
        expanded("Bearer ${T}", {}, server="gh")


def test_a_tool_name_glob_in_a_rule_covers_a_servers_tools():
    rules = RuleSet.from_strings(allow=["mcp__docs__*"], deny=["mcp__github__*"])
    assert rules.for_tool("mcp__github__create_issue")[0] == "deny"
    assert rules.for_tool("mcp__docs__search")[0] == "allow"
    assert rules.for_tool("mcp__githubx__a") is None
    assert rules.for_tool("bash") is None
