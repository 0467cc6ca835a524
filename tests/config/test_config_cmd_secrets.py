"""`lathe config show` promises secrets masked, and a key written inside a longer value
(a hook's curl command, an MCP server's arguments) is masked too, by the detector the
`memory` tool refuses credentials with. Reproduced: a user file's stop hook
`curl -H 'Authorization: Bearer sk-proj-...'` was printed whole, text and `--json`,
while a token in an MCP url was masked."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

KEY = "sk-proj-abcdefghijklmnop1234567890"
GITLAB = "glpat-abcdEFGH1234ijklMNOP"
PASSWORD = "S3cr3tPassw0rd"
USER_FILE = f"""
[hooks]
stop = [{{command = "curl -H 'Authorization: Bearer {KEY}' https://hooks.example/x"}}]

[mcp.servers.db]
command = "db-mcp"
args = ["--token={GITLAB}", "--dsn", "postgres://admin:{PASSWORD}@db.internal:5432/app"]
"""


def _show(workspace: Path, *extra: str) -> str:
    done = subprocess.run(
        [sys.executable, "-m", "lathe", "config", "show", "-C", str(workspace), *extra],
        capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    return done.stdout


@pytest.fixture
def shown(workspace: Path, user_file: Path, tmp_path: Path, monkeypatch) -> Path:
    monkeypatch.setenv("LATHE_HOME", str(tmp_path / "home"))
    user_file.write_text(USER_FILE)
    return workspace


def test_a_key_inside_a_hook_command_or_an_argument_is_masked(shown: Path) -> None:
    out = _show(shown)

    for secret in (KEY[5:-4], GITLAB[3:-4], PASSWORD):
        assert secret not in out
    hook = next(line for line in out.splitlines() if line.startswith("hooks.stop = "))
    assert "curl -H 'Authorization: Bearer sk-…7890' https://hooks.example/x" in hook
    args = next(line for line in out.splitlines() if line.startswith("mcp.servers.db.args"))
    assert '["--token=glp…MNOP", "--dsn", "postgres://admin:…@db.internal:5432/app"]' in args


def test_the_json_document_masks_them_the_same(shown: Path) -> None:
    out = _show(shown, "--json")

    for secret in (KEY[5:-4], GITLAB[3:-4], PASSWORD):
        assert secret not in out
    values = json.loads(out)["values"]
    assert values["hooks.stop"]["value"][0]["command"] == (
        "curl -H 'Authorization: Bearer sk-…7890' https://hooks.example/x"
    )
    assert values["mcp.servers.db.args"]["value"] == [
        "--token=glp…MNOP", "--dsn", "postgres://admin:…@db.internal:5432/app"
    ]  # fmt: skip
