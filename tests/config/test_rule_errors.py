"""A permission rule in the config that lathe cannot use is a config error naming its
layer and key, from `lathe run` and `lathe config show` alike.

Reported against main: with `deny = ["Edit(tests/**)"]` in the user file a run stopped
with `lathe: the permission rule 'Edit(tests/**)' names no tool lathe has; did you
mean…`, naming no file or key, and `lathe config show` exited 0 printing the rule as the
effective value; the same for `-c 'permissions.deny=["read(.env"]'`. Names only the run
knows (a plugin's tools, MCP servers') are still judged by the run.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from lathe.config import load_config
from lathe.errors import UsageError

CASE = (
    "the permission rule 'Edit(tests/**)' names no tool lathe has; did you mean "
    "'edit(tests/**)'? Tool names are lower case"
)
UNREAD = "cannot read the permission rule 'read(.env': write it as TOOL or TOOL(PATTERN)"


def lathe(tmp_path: Path, *args: str) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("LATHE_", "OPENAI_"))}
    env |= {"OPENAI_API_KEY": "sk-test", "LATHE_HOME": str(tmp_path / "home")}
    env["LATHE_CONFIG"] = str(tmp_path / "user.toml")
    return subprocess.run(
        [sys.executable, "-m", "lathe", *args],
        cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120,
        stdin=subprocess.DEVNULL,
    )  # fmt: skip


def _one_line(result: subprocess.CompletedProcess) -> str:
    assert result.returncode == 2, result.stdout + result.stderr
    (line,) = result.stderr.splitlines()
    return line


def test_a_capitalised_tool_in_the_user_file_names_the_file_and_key(tmp_path, fake_openai):
    user = tmp_path / "user.toml"
    user.write_text('[permissions]\ndeny = ["Edit(tests/**)"]\n')

    shown = lathe(tmp_path, "config", "show")
    ran = lathe(tmp_path, "run", "--model", "m", "--base-url", fake_openai.base_url, "hi")

    assert _one_line(shown).startswith(f"lathe: {user}: permissions.deny[0]: {CASE}")
    assert shown.stdout == ""
    assert _one_line(ran) == _one_line(shown)
    assert fake_openai.chat_bodies() == []


def test_a_rule_given_with_c_that_cannot_be_read_names_c_and_key(tmp_path, fake_openai):
    (tmp_path / "user.toml").write_text("")
    override = 'permissions.deny=["read(.env)", "read(.env"]'

    shown = lathe(tmp_path, "config", "show", "-c", override)
    ran = lathe(
        tmp_path, "run", "-c", override, "--model", "m", "--base-url", fake_openai.base_url, "hi"
    )

    assert _one_line(shown).startswith(f"lathe: -c permissions.deny[1]: {UNREAD}")
    assert _one_line(ran) == _one_line(shown)


@pytest.fixture
def repo(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    root = tmp_path / "repo"
    (root / ".git").mkdir(parents=True)
    (root / ".lathe").mkdir()
    user = tmp_path / "user.toml"
    user.write_text('[permissions]\ndeny = ["read(.env)"]\n')
    monkeypatch.setenv("LATHE_CONFIG", str(user))
    return root


def test_the_index_is_the_entrys_own_in_the_layer_that_gave_it(repo):
    # The lists add up across layers; the user's rule is not counted in the project's.
    project = repo / ".lathe" / "config.toml"
    project.write_text('[permissions]\nask = ["bash(git push:*)", "Bash(rm:*)"]\n')

    with pytest.raises(UsageError) as caught:
        load_config(repo)

    assert str(caught.value).startswith(
        f"{project}: permissions.ask[1]: the permission rule 'Bash(rm:*)' names no tool "
        "lathe has; did you mean 'bash(rm:*)'?"
    )


def test_a_command_pattern_that_matches_nothing_is_named_too(repo):
    project = repo / ".lathe" / "config.toml"
    project.write_text('[permissions]\ndeny = ["bash(rm *)"]\n')

    with pytest.raises(UsageError) as caught:
        load_config(repo)

    assert str(caught.value).startswith(
        f"{project}: permissions.deny[0]: the permission rule 'bash(rm *)' matches no command"
    )


def test_mcp_and_plugin_tool_names_load_for_the_run_to_judge(repo):
    rules = '["mcp__files__read_file", "mcp__web__*", "deploy(prod)", "my_plugin_tool", "*"]'
    (repo / ".lathe" / "config.toml").write_text(f"[permissions]\ndeny = {rules}\n")

    loaded = load_config(repo)

    assert loaded.config.permissions.deny[1:] == [
        "mcp__files__read_file", "mcp__web__*", "deploy(prod)", "my_plugin_tool", "*",
    ]  # fmt: skip
