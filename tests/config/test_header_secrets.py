"""A header named for a credential takes its value from the environment, never the file.

Reproduced on landed main: a user file's `[providers.corp] headers = { X-Api-Key =
"zzq8w7e6r5t4y3u2i1o0", Cookie = "session=9a8b7c6d5e4f3a2b1c0d" }` was accepted and
`lathe config show` (and `--json`) printed both in clear: a literal was refused only
when it looked like a key by itself (32 characters or more), whatever the header's name.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from tests.config.test_config_errors import error_of

from lathe.config import load_config

API_KEY = "zzq8w7e6r5t4y3u2i1o0"
SESSION = "9a8b7c6d5e4f3a2b1c0d"
CORP = (
    '[providers.corp]\nbase_url = "https://llm.corp.example/v1"\n'
    f'headers = {{ X-Api-Key = "{API_KEY}", Cookie = "session={SESSION}" }}\n'
)


def _provider_with(name: str, value: str) -> str:
    """A user file declaring provider `corp` with one header."""
    return (
        f'[providers.corp]\nbase_url = "https://x.example/v1"\n'
        f'headers = {{ "{name}" = "{value}" }}\n'
    )


def _show(workspace: Path, *extra: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "lathe", "config", "show", "-C", str(workspace), *extra],
        capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL,
    )  # fmt: skip


@pytest.mark.parametrize("extra", [(), ("--json",)])
def test_a_short_literal_in_a_credential_header_is_refused_and_not_shown(
    workspace: Path, user_file: Path, tmp_path: Path, monkeypatch, extra: tuple[str, ...]
) -> None:
    monkeypatch.setenv("LATHE_HOME", str(tmp_path / "home"))
    user_file.write_text(CORP)

    shown = _show(workspace, *extra)

    assert shown.returncode == 2
    assert f"{user_file}: providers.corp.headers: header 'X-Api-Key' " in shown.stderr
    assert "${VAR}" in shown.stderr
    for secret in (API_KEY, SESSION):
        assert secret not in shown.stdout + shown.stderr


@pytest.mark.parametrize(
    ("name", "value"),
    [
        ("X-Api-Key", "changeme"),
        ("Authorization", "Bearer abc123"),
        ("Authorization", "Basic ${USER}:hunter2"),
        ("X-Auth-Token", "${TOKEN:-t0k3n}"),
        ("Cookie", "session=abc; theme=dark"),
        ("Cookie", "${SESSION}; theme=dark"),
        ("Proxy-Authorization", "abc"),
    ],
)
def test_a_literal_in_a_credential_header_is_refused_without_being_echoed(
    workspace: Path, user_file: Path, name: str, value: str
) -> None:
    user_file.write_text(_provider_with(name, value))

    message = error_of(workspace)

    assert message.startswith(f"{user_file}: providers.corp.headers: header {name!r} ")
    assert value not in message


@pytest.mark.parametrize(
    ("name", "value"),
    [
        ("X-Api-Key", "${CORP_KEY}"),
        ("Authorization", "Bearer ${CORP_TOKEN}"),
        ("Authorization", "${SCHEME_AND_TOKEN}"),
        ("Authorization", "token ${GH_TOKEN}"),
        ("Cookie", "session=${SESSION}"),
        ("Cookie", "session=${SESSION}; csrf=${CSRF}"),
        ("X-Auth-Token", "${TOKEN:-}"),
        ("X-Auth-Scheme", "hmac"),
        ("X-Token-Type", "jwt"),
        ("X-Org", "team-7"),
        ("anthropic-version", "2023-06-01"),
    ],
)
def test_a_credential_header_from_the_environment_and_plain_headers_are_fine(
    workspace: Path, user_file: Path, name: str, value: str
) -> None:
    user_file.write_text(_provider_with(name, value))

    assert load_config(workspace).config.providers["corp"].headers == {name: value}


def test_an_mcp_servers_credential_header_is_refused_too(workspace: Path, user_file: Path) -> None:
    user_file.write_text(
        '[mcp.servers.corp]\nurl = "https://mcp.corp.example/mcp"\n'
        f'headers = {{ X-Api-Key = "{API_KEY}" }}\n'
    )

    message = error_of(workspace)

    assert message.startswith(f"{user_file}: mcp.servers.corp.headers: header 'X-Api-Key' ")
    assert API_KEY not in message


def test_an_mcp_servers_env_is_judged_by_value_as_before(workspace: Path, user_file: Path) -> None:
    user_file.write_text(
        '[mcp.servers.corp]\ncommand = "corp-mcp"\n'
        'env = { NODE_ENV = "production", API_TOKEN = "${CORP_TOKEN}", LOG_LEVEL = "debug" }\n'
    )

    env = load_config(workspace).config.mcp.servers["corp"].env

    assert env == {"NODE_ENV": "production", "API_TOKEN": "${CORP_TOKEN}", "LOG_LEVEL": "debug"}
