"""A blank verify command is refused, never run as a check nor taken for none.

Reported against main: `lathe run --verify ' '` reported `verified` (the blank command
exits 0), and `--verify ''` silently meant no check, so `--verify "$CMD"` in CI with CMD
unset passed; LATHE_VERIFY did the same. An empty `verify = ""` in a config file is no
documented way to switch a check off (leaving the key out is), so it is refused too.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from tests.fakes.openai_server import Reply

WHAT_TO_DO = "give a command to run, or leave it out for no check"


def _run(tmp_path: Path, server, *args: str, env: dict[str, str] | None = None, user: str = ""):
    (tmp_path / "ws").mkdir(exist_ok=True)
    (tmp_path / "user.toml").write_text(user)
    environ = {k: v for k, v in os.environ.items() if not k.startswith(("LATHE_", "OPENAI_"))}
    environ |= {"OPENAI_API_KEY": "sk-test", "LATHE_HOME": str(tmp_path / "home")}
    environ |= {"LATHE_CONFIG": str(tmp_path / "user.toml"), **(env or {})}
    server.responder = lambda request: Reply("Done.")
    return subprocess.run(
        [sys.executable, "-m", "lathe", "run", "--model", "m", "--base-url", server.base_url,
         "-C", str(tmp_path / "ws"), *args, "fix it"],
        env=environ, capture_output=True, text=True, timeout=120, stdin=subprocess.DEVNULL,
    )  # fmt: skip


def _refused(result, blamed: str) -> None:
    assert result.returncode == 2, result.stdout + result.stderr
    assert result.stderr.splitlines() == [f"lathe: {blamed}: empty command; {WHAT_TO_DO}"]


@pytest.mark.parametrize("blank", ["", " ", "\t \n"])
def test_a_blank_verify_flag_stops_the_run_before_the_model_is_asked(tmp_path, fake_openai, blank):
    result = _run(tmp_path, fake_openai, "--verify", blank)

    _refused(result, "--verify")
    assert fake_openai.chat_bodies() == []


@pytest.mark.parametrize("blank", ["", "  "])
def test_a_blank_verify_variable_is_refused_too(tmp_path, fake_openai, blank):
    result = _run(tmp_path, fake_openai, env={"LATHE_VERIFY": blank})

    _refused(result, "env LATHE_VERIFY: agent.verify")
    assert fake_openai.chat_bodies() == []


@pytest.mark.parametrize("blank", ['""', '" "'])
def test_a_blank_verify_in_the_user_file_or_c_names_where_it_is(tmp_path, fake_openai, blank):
    from_file = _run(tmp_path, fake_openai, user=f"[agent]\nverify = {blank}\n")
    _refused(from_file, f"{tmp_path / 'user.toml'}: agent.verify")

    from_c = _run(tmp_path, fake_openai, "-c", f"agent.verify={blank}")
    _refused(from_c, "-c agent.verify")
    assert fake_openai.chat_bodies() == []


def test_a_real_verify_command_still_runs(tmp_path, fake_openai):
    result = _run(tmp_path, fake_openai, "--verify", "true")

    assert result.returncode == 0, result.stderr
    assert "verified" in result.stdout + result.stderr
