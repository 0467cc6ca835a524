"""A project file where `lathe serve` starts cannot send the server's key elsewhere.

Reported against main: `.lathe/config.toml` holding `[serve] any_endpoint = true`, in
the folder the server started in, made it accept a session whose base_url was
https://evil.example.com/v1 — the session's model requests carry the server's API key —
and `lathe trust` said the file "sets nothing that reaches outside the sandbox".
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from tests.fakes.openai_server import Reply
from tests.service.scripts import workspace_for
from tests.service.server import ServeProcess

from lathe.client import ServiceError

EVIL = "https://evil.example.com/v1"
ANY_ENDPOINT = "[serve]\nany_endpoint = true\n"


def _user_file(home: Path) -> dict[str, str]:
    """LATHE_CONFIG naming an empty user file beside the data dir: not the tester's own."""
    user = home.parent / "user.toml"
    user.touch()
    return {"LATHE_CONFIG": str(user)}


def _environ(home: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("LATHE_", "OPENAI_"))}
    return env | {"LATHE_HOME": str(home), "OPENAI_API_KEY": "sk-test", **_user_file(home)}


def _project(folder: Path, text: str) -> None:
    (folder / ".lathe").mkdir(parents=True)
    (folder / ".lathe" / "config.toml").write_text(text)


def _serve_until_it_ends(home: Path) -> subprocess.CompletedProcess[str]:
    """Start `lathe serve` where ServeProcess does; a server that starts is stopped and
    the test fails, since it must not start."""
    process = subprocess.Popen(
        [sys.executable, "-m", "lathe", "serve", "--port", "0"],
        env=_environ(home), cwd=home.parent, text=True,
        stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
    )  # fmt: skip
    assert process.stdout is not None
    url = process.stdout.readline().strip()
    if url:
        process.terminate()
        process.communicate(timeout=20)
        pytest.fail(f"lathe serve started at {url} with an untrusted serve.any_endpoint")
    out, err = process.communicate(timeout=20)
    return subprocess.CompletedProcess(process.args, process.returncode, out, err)


def test_an_untrusted_any_endpoint_stops_the_server_before_it_listens(tmp_path):
    _project(tmp_path, ANY_ENDPOINT)

    result = _serve_until_it_ends(tmp_path / "home")

    assert result.returncode == 2
    (line,) = result.stderr.splitlines()
    assert line.startswith("lathe: ")
    assert "serve.any_endpoint" in line and "lathe trust" in line


def test_once_trusted_the_project_file_lets_a_client_name_any_endpoint(tmp_path):
    _project(tmp_path, ANY_ENDPOINT)
    home = tmp_path / "home"
    trusted = subprocess.run(
        [sys.executable, "-m", "lathe", "trust"],
        env=_environ(home), cwd=tmp_path, capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert trusted.returncode == 0, trusted.stderr
    assert "serve.any_endpoint = true" in trusted.stdout

    ws = workspace_for(tmp_path, "ws")
    with ServeProcess(home, env=_user_file(home)) as server, server.client() as client:
        session = client.create_session(str(ws), model="m", base_url=EVIL)
    assert session.id


def test_limits_need_no_trust_and_a_far_endpoint_stays_refused(tmp_path):
    _project(tmp_path, "[serve]\nmax_commands = 2\nmax_model_calls = 3\nany_endpoint = false\n")

    home, ws = tmp_path / "home", workspace_for(tmp_path, "ws")
    with (
        ServeProcess(home, env=_user_file(home)) as server,
        server.client() as client,
        pytest.raises(ServiceError) as refused,
    ):
        client.create_session(str(ws), model="m", base_url=EVIL)
    assert refused.value.status == 400
    assert "serve.any_endpoint" in str(refused.value)



def test_a_run_in_that_folder_needs_no_trust_for_the_servers_setting(tmp_path, fake_openai):
    # `lathe run` stopped with exit 2 on an untrusted serve.any_endpoint it never uses.
    _project(tmp_path, ANY_ENDPOINT)
    fake_openai.enqueue(Reply("Done."))

    ran = subprocess.run(
        [sys.executable, "-m", "lathe", "run", "--model", "m", "--base-url",
         fake_openai.base_url, "-C", str(tmp_path), "look around"],
        env=_environ(tmp_path / "home"), cwd=tmp_path, capture_output=True, text=True,
        timeout=120, stdin=subprocess.DEVNULL,
    )  # fmt: skip

    assert ran.returncode == 0, ran.stderr
