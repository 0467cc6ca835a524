"""Declared MCP servers: where each comes from, and that a project's start only once
trusted, the trust tied to what the project file sets for them."""

from __future__ import annotations

import json
import re
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
    user_file.write_text("")
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


def test_a_bad_mcp_json_entry_is_a_notice_and_the_other_servers_still_load(workspace, tmp_path):
    token = "ghp_abcdefghijklmnopqrstuvwxyz0123456789"
    servers = {
        "x": {"args": []},
        "gh": {"command": "gh-server", "env": {"K": token}},  # Claude Code's usual layout
        "my server": {"command": "s"},
        "../../tmp/escape": {"command": "s"},
        "ok": {"command": "s"},
    }
    (workspace / ".mcp.json").write_text(json.dumps({"mcpServers": servers}))

    declared = _declared(workspace, tmp_path / "home")

    assert [entry.name for entry in declared.entries] == ["ok"]
    said = "\n".join(declared.notices)
    assert re.search(r"\.mcp\.json: mcpServers\.x: .*command .* url", said)
    assert re.search(r"mcpServers\.gh\.env: 'K' looks like it holds a secret", said)
    assert "'my server': a server name must be" in said and "'../../tmp/escape'" in said
    assert token not in said and token[4:20] not in said

    (workspace / ".mcp.json").write_text("{not json")
    declared = _declared(workspace, tmp_path / "home")
    assert declared.entries == [] and "not valid JSON" in declared.notices[0]


def test_an_mcp_json_server_runs_from_the_folder_of_the_file(tmp_path):
    """Relative arguments (`./tools/server.py`) mean the same from any subfolder."""
    import subprocess

    root = tmp_path / "repo"
    (root / "sub").mkdir(parents=True)
    subprocess.run(["git", "init", "-q", str(root)], check=True)
    servers = {"a": {"command": "python", "args": ["./tools/srv.py"]},
               "b": {"command": "python", "cwd": "tools"}}  # fmt: skip
    (root / ".mcp.json").write_text(json.dumps({"mcpServers": servers}))

    declared = {e.name: e.config for e in _declared(root / "sub", tmp_path / "home").entries}

    assert declared["a"].cwd == str(root.resolve())
    assert declared["b"].cwd == str(root.resolve() / "tools")


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


def test_imported_names_become_names_lathe_takes_and_a_clash_is_refused(tmp_path):
    from lathe.mcptools.importing import read_foreign

    codex = tmp_path / "config.toml"
    codex.write_text(
        '[mcp_servers.a___b]\ncommand = "x"\n[mcp_servers._priv]\ncommand = "y"\n'
        '[mcp_servers."docs.site"]\ncommand = "z"\n'
    )
    assert list(read_foreign(codex)[0]) == ["a_b", "priv", "docs-site"]

    codex.write_text('[mcp_servers."a.b"]\ncommand = "z"\n[mcp_servers.a-b]\ncommand = "z"\n')
    with pytest.raises(UsageError, match=r"two servers become 'a-b'"):
        read_foreign(codex)


def test_a_no_to_trusting_a_projects_servers_is_remembered_until_they_change(workspace, tmp_path):
    home = tmp_path / "home"
    asked = []

    def answer(no_or_yes: bool):
        def ask(settings) -> bool:
            asked.append(settings.file)
            return no_or_yes

        return ask

    servers = {"mcpServers": {"docs": {"command": "docs-server"}}}
    (workspace / ".mcp.json").write_text(json.dumps(servers))
    assert not _declared(workspace, home, ask=answer(False)).entries[0].trusted
    assert not _declared(workspace, home, ask=answer(True)).entries[0].trusted
    assert len(asked) == 1  # the "no" stood: not asked again

    assert _declared(workspace, home, trust_now=True).entries[0].trusted  # the flag overrides
    servers["mcpServers"]["docs"]["args"] = ["--all"]  # changed: asked again
    (workspace / ".mcp.json").write_text(json.dumps(servers))
    assert _declared(workspace, home, ask=answer(True)).entries[0].trusted
    assert len(asked) == 2
    assert _declared(workspace, home).entries[0].trusted
