"""The command line: every subcommand loads, and start-up stays free of heavy imports."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest
from click.testing import CliRunner

from lathe.ui.cli import _LAZY_COMMANDS, cli


@pytest.mark.parametrize("name", [*_LAZY_COMMANDS, "run"])
def test_every_subcommand_loads_and_has_help(name):
    result = CliRunner().invoke(cli, [name, "--help"])
    assert result.exit_code == 0, result.output
    assert "Usage:" in result.output


def test_a_group_summary_names_only_subcommands_the_group_has():
    # `lathe --help` said "mcp  MCP servers: list, check, import" of a group without check.
    for name, (_, _, summary) in _LAZY_COMMANDS.items():
        if ": " not in summary or "," not in summary:
            continue
        shown = CliRunner().invoke(cli, [name, "--help"]).output
        if "Commands:" not in shown:
            continue  # not a group: the summary lists something else
        commands = shown.split("Commands:", 1)[1]
        listed = summary.split(": ", 1)[1].split(";")[0].rstrip(".").split(", ")
        for sub in listed:
            assert f"  {sub.split()[0]} " in commands, (name, sub, commands)


def test_version_does_not_import_sdks_or_renderers():
    code = (
        "import sys; from lathe.ui.cli import cli\n"
        "try:\n    cli(['--version'])\nexcept SystemExit:\n    pass\n"
        "heavy = [m for m in ('openai', 'anthropic', 'rich', 'prompt_toolkit', 'tree_sitter',"
        " 'pydantic') if m in sys.modules]\n"
        "print('heavy:' + ','.join(heavy))"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert result.stdout.strip().splitlines()[-1] == "heavy:"


def test_listing_sessions_does_not_import_the_config_schema(tmp_path):
    # The --base-url check ran for every command, its value unset too, and imported the
    # config schema and pydantic: about 150 ms on every `lathe sessions list`.
    code = (
        "import sys; from lathe.ui.cli import cli\n"
        "try:\n    cli(['sessions', 'list', '-C', sys.argv[1]])\nexcept SystemExit:\n    pass\n"
        "print('heavy:' + ','.join(m for m in ('pydantic', 'lathe.config.schema')"
        " if m in sys.modules))"
    )
    env = {**os.environ, "LATHE_HOME": str(tmp_path / "home")}
    result = subprocess.run(
        [sys.executable, "-c", code, str(tmp_path)], capture_output=True, text=True, env=env
    )
    assert result.stdout.strip().splitlines()[-1] == "heavy:", result.stdout + result.stderr
