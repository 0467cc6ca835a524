"""An `Authorization` value is a scheme word, then the credential: only that must be
`${VAR}` references, whatever the scheme.

Reproduced on main: only Bearer, Basic, token and Bot were taken for a scheme, so fal.ai's
`Key ${FAL_KEY}`, Yandex's `Api-Key ${YC_KEY}` or GitHub's `Token token=${T}` were
refused, and the error told the user to write a `${VAR}`, as they had. Headers naming a
setting about a credential (`X-Auth-Email`, `X-Auth-Project-Id`) were refused too.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from tests.config.test_config_errors import error_of
from tests.config.test_header_secrets import _provider_with, _show

from lathe.config import load_config


@pytest.mark.parametrize(
    ("name", "value"),
    [
        ("Authorization", "Key ${FAL_KEY}"),
        ("Authorization", "Api-Key ${YC_KEY}"),
        ("Authorization", "ApiKey ${ES}"),
        ("Authorization", "OAuth ${T}"),
        ("Authorization", "DeepL-Auth-Key ${K}"),
        ("Authorization", "Token token=${T}"),
        ("Authorization", 'Token token="${T}"'),
        ("Authorization", "Digest username=${U}, response=${R}"),
        ("Proxy-Authorization", "Negotiate ${TICKET}"),
        ("X-Auth-Email", "ada@example.com"),
        ("X-Auth-Project-Id", "proj-7"),
        ("X-Signature-Version", "2"),
        ("X-Auth-Region", "eu-west-1"),
        ("X-Auth-User", "ada"),
    ],
)
def test_a_credential_after_any_scheme_word_may_be_a_reference(
    workspace: Path, user_file: Path, name: str, value: str
) -> None:
    user_file.write_text(_provider_with(name, value.replace('"', '\\"')))

    assert load_config(workspace).config.providers["corp"].headers == {name: value}


@pytest.mark.parametrize(
    "value",
    [
        "Key abc123",
        "Api-Key zz9",
        "OAuth ${T} abc",
        "Token token=abc",
        "Token token=${T}, extra=abc",
        "Digest username=${U}, response=abc",
        "Key ${K:-abc}",
        "Key",
        "Key ",
    ],
)
def test_a_literal_after_a_scheme_word_is_still_refused(
    workspace: Path, user_file: Path, value: str
) -> None:
    user_file.write_text(_provider_with("Authorization", value))

    message = error_of(workspace)

    assert message.startswith(f"{user_file}: providers.corp.headers: header 'Authorization' ")
    assert value.split()[-1] not in message.removeprefix(str(user_file))


def test_lathe_config_show_loads_a_scheme_word_it_does_not_know(
    workspace: Path, user_file: Path, tmp_path: Path, monkeypatch
) -> None:
    monkeypatch.setenv("LATHE_HOME", str(tmp_path / "home"))
    user_file.write_text(_provider_with("Authorization", "Key ${FAL_KEY}"))

    shown = _show(workspace)

    assert shown.returncode == 0, shown.stderr
    assert "Key ${FAL_KEY}" in shown.stdout
