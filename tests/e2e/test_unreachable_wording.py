"""Nothing listening at the model's address: the one line names where the address came from.

Reproduced on landed main: `lathe run --model ollama/llama3.1 TASK` with no Ollama said
`nothing is listening at http://127.0.0.1:11434/v1: start the server or fix --base-url`,
though no --base-url was given: the address was providers.ollama.base_url's.
"""

from __future__ import annotations

import socket
import subprocess
import sys
from pathlib import Path

import pytest
from tests.e2e.test_run_edges import TASK, _env, _workspace


def _closed_url() -> str:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return f"http://127.0.0.1:{sock.getsockname()[1]}/v1"


def _run(tmp_path: Path, *args: str, **env: str) -> subprocess.CompletedProcess:
    ws = _workspace(tmp_path)
    argv = [sys.executable, "-m", "lathe", "run", "-C", str(ws), *args, TASK]
    return subprocess.run(
        argv, cwd=tmp_path, env={**_env(tmp_path), **env}, capture_output=True, text=True,
        timeout=120, stdin=subprocess.DEVNULL,
    )  # fmt: skip


def _said(result: subprocess.CompletedProcess) -> str:
    last = result.stderr.strip().splitlines()[-1]
    assert "nothing is listening at" in last, result.stderr
    return last


def test_the_provider_key_from_the_user_file_is_named(tmp_path):
    url = _closed_url()
    user = tmp_path / "config.toml"
    user.write_text(f'[providers.ollama]\nbase_url = "{url}"\n')

    result = _run(tmp_path, "--model", "ollama/llama3.1", LATHE_CONFIG=str(user))

    said = _said(result)
    assert f"fix providers.ollama.base_url in {user}" in said, said
    assert "--base-url" not in said


def test_the_provider_key_set_with_c_is_named(tmp_path):
    url = _closed_url()

    result = _run(
        tmp_path, "--model", "ollama/llama3.1", "-c", f'providers.ollama.base_url="{url}"'
    )

    said = _said(result)
    assert "fix -c providers.ollama.base_url" in said, said
    assert "--base-url" not in said


def test_the_default_address_is_named_by_its_key(tmp_path):
    with socket.socket() as probe:
        if probe.connect_ex(("127.0.0.1", 11434)) == 0:
            pytest.skip("something listens at Ollama's port here")

    result = _run(tmp_path, "--model", "ollama/llama3.1")

    said = _said(result)
    assert "set providers.ollama.base_url" in said, said
    assert "--base-url" not in said


@pytest.mark.parametrize("variable", ["LATHE_BASE_URL", "OPENAI_BASE_URL"])
def test_a_variable_is_named(tmp_path, variable):
    result = _run(tmp_path, "--model", "openai/m", **{variable: _closed_url()})

    said = _said(result)
    assert f"fix {variable}" in said, said
    assert "--base-url" not in said


def test_the_flag_is_named_when_it_gave_the_address(tmp_path):
    result = _run(tmp_path, "--model", "m", "--base-url", _closed_url())

    assert "start the server or fix --base-url" in _said(result)


def test_doctor_names_the_same_setting(tmp_path):
    user = tmp_path / "config.toml"
    user.write_text(f'[providers.ollama]\nbase_url = "{_closed_url()}"\n')
    argv = [sys.executable, "-m", "lathe", "doctor", "--model", "ollama/llama3.1"]
    env = {**_env(tmp_path), "LATHE_CONFIG": str(user), "NO_COLOR": "1"}

    result = subprocess.run(
        argv, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120,
        stdin=subprocess.DEVNULL,
    )  # fmt: skip

    lines = result.stdout.splitlines()
    at = next(i for i, line in enumerate(lines) if line.split()[1:2] == ["endpoint"])
    fix = lines[at + 1]
    assert f"fix providers.ollama.base_url in {user} if the address is wrong" in fix, fix
    assert "--base-url" not in fix
