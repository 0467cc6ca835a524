"""A key or a secret header holding whitespace, a control or a non-ASCII character.

Reproduced on landed main with the real CLI:
- `OPENAI_API_KEY=$'f3a9...\\n'` (a key read with `$(cat keyfile)` keeps no newline, but
  an `export` from a file does) was retried five times, every line, the --json events
  and the session files carrying the whole key as httpx quoted it
  (`Illegal header value b'Bearer f3a9...\\n'`);
- `OPENAI_API_KEY=" "` passed `lathe doctor` as set, then failed the same way;
- a non-breaking space pasted from a web page crashed the run with a traceback
  (UnicodeEncodeError, exit 1) and left the session unfinished.

Now surrounding whitespace is dropped silently, and a key still holding whitespace, a
control or a non-ASCII character stops the run at once (exit 2) with one line naming
the variable and never the value; doctor says the same.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from tests.e2e.test_run_edges import TASK, _argv, _env, _workspace
from tests.fakes.openai_server import Reply

HEX_KEY = "f3a9c1d2e4b5a6978877665544332211"


def _run(server, tmp_path: Path, *args: str, **env: str) -> subprocess.CompletedProcess:
    ws = tmp_path / "ws"
    if not ws.exists():
        _workspace(tmp_path)
    return subprocess.run(
        _argv(server, ws, *args), cwd=tmp_path, env={**_env(tmp_path), **env},
        capture_output=True, text=True, timeout=120, stdin=subprocess.DEVNULL,
    )  # fmt: skip


def _doctor(server, tmp_path: Path, *args: str, **env: str) -> subprocess.CompletedProcess:
    argv = [sys.executable, "-m", "lathe", "doctor", "--model", "m",
            "--base-url", server.base_url, "-C", str(tmp_path), *args]  # fmt: skip
    return subprocess.run(
        argv, cwd=tmp_path, env={**_env(tmp_path), "NO_COLOR": "1", **env},
        capture_output=True, text=True, timeout=120, stdin=subprocess.DEVNULL,
    )  # fmt: skip


def _written(tmp_path: Path) -> str:
    """Everything lathe wrote under LATHE_HOME (sessions, logs)."""
    home = tmp_path / "home"
    files = [p for p in home.rglob("*") if p.is_file()] if home.exists() else []
    return "".join(p.read_text(errors="replace") for p in files)


def test_a_key_ending_in_a_newline_is_sent_without_it(tmp_path, fake_openai):
    fake_openai.enqueue(Reply("Done."))

    result = _run(fake_openai, tmp_path, "--json", TASK, OPENAI_API_KEY=f"  {HEX_KEY}\n")

    assert result.returncode == 0, result.stderr
    assert fake_openai.requests[0].headers["authorization"] == f"Bearer {HEX_KEY}"
    assert HEX_KEY not in result.stdout + result.stderr + _written(tmp_path)


# (the key, what the one line says is wrong with it)
BAD_KEYS = {
    "a line break inside": (f"{HEX_KEY}\nsecond-line-of-the-file", "line break"),
    "a control character": (f"{HEX_KEY}\x07bell", "control character"),
    "a non-breaking space": ("sk-abc\u00a0def1234567890abcdef", "non-ASCII"),
}


def _pieces(key: str) -> list[str]:
    """The parts of `key` long enough to be recognised if printed."""
    return [part for part in key.replace("\u00a0", " ").split() if len(part) >= 6]


@pytest.mark.parametrize("name", BAD_KEYS)
def test_a_key_holding_odd_characters_stops_the_run_at_once(tmp_path, fake_openai, name):
    key, said = BAD_KEYS[name]

    result = _run(fake_openai, tmp_path, "--json", TASK, OPENAI_API_KEY=key)

    assert result.returncode == 2, result.stdout + result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith("lathe: OPENAI_API_KEY "), lines
    assert said in lines[0]
    assert "Traceback" not in result.stderr
    assert fake_openai.requests == []
    shown = result.stdout + result.stderr + _written(tmp_path)
    for piece in _pieces(key):
        assert piece not in shown


@pytest.mark.parametrize("key", ["   ", "not needed"])
def test_a_placeholder_key_for_a_local_server_is_no_problem(tmp_path, fake_openai, key):
    # llama.cpp and vLLM take any key; `OPENAI_API_KEY=" "` or "not needed" had worked
    # with them until keys were checked, then stopped every run with exit 2.
    fake_openai.enqueue(Reply("Done."))
    result = _run(fake_openai, tmp_path, TASK, OPENAI_API_KEY=key)

    assert result.returncode == 0, result.stderr
    sent = fake_openai.requests[0].headers.get("authorization") or ""
    assert sent == "Bearer not needed" if key.strip() else sent.split() != ["Bearer"]


@pytest.mark.parametrize(("key", "said"), [("   ", "blank"), ("abc123 def456", "space")])
def test_a_blank_or_spaced_key_for_a_remote_server_is_refused(tmp_path, monkeypatch, key, said):
    from lathe.config import load_config, resolve_model

    for name in ("LATHE_API_KEY", "OPENAI_BASE_URL", "LATHE_BASE_URL"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("OPENAI_API_KEY", key)
    environ = {"OPENAI_API_KEY": key, "LATHE_CONFIG": "/dev/null"}
    config = load_config(tmp_path, environ=environ).config
    model = resolve_model(config, "gpt-4o")
    problem = model.key_problem()
    assert problem is not None and problem.startswith("OPENAI_API_KEY ") and said in problem
    assert "abc123" not in problem


def test_lathe_api_key_is_named_when_it_is_the_odd_one(tmp_path, fake_openai):
    result = _run(fake_openai, tmp_path, TASK, LATHE_API_KEY=f"{HEX_KEY}\nx")

    assert result.returncode == 2, result.stderr
    assert result.stderr.startswith("lathe: LATHE_API_KEY "), result.stderr
    assert HEX_KEY not in result.stderr + result.stdout


@pytest.mark.parametrize(
    "name", ["a control character", "a non-breaking space", "a line break inside"]
)
def test_doctor_fails_the_key_check_without_showing_it(tmp_path, fake_openai, name):
    key, said = BAD_KEYS[name]

    result = _doctor(fake_openai, tmp_path, "--live", OPENAI_API_KEY=key)

    assert result.returncode == 1, result.stdout + result.stderr
    line = next(line for line in result.stdout.splitlines() if line.split()[1:2] == ["api"])
    assert line.startswith("FAIL") and "OPENAI_API_KEY" in line and said in line, line
    assert "Traceback" not in result.stdout + result.stderr
    assert fake_openai.requests == []
    for piece in _pieces(key):
        assert piece not in result.stdout + result.stderr


def test_a_header_from_a_variable_holding_a_line_break_stops_the_run(tmp_path, fake_openai):
    header = 'providers.openai.headers={"X-Team-Token" = "${TEAM_TOKEN}"}'
    token = f"{HEX_KEY}\nrest"

    result = _run(fake_openai, tmp_path, "-c", header, TASK, TEAM_TOKEN=token)

    assert result.returncode == 2, result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert "providers.openai.headers.X-Team-Token" in lines[0]
    assert "TEAM_TOKEN" in lines[0]
    assert "Traceback" not in result.stderr
    assert HEX_KEY not in result.stdout + result.stderr
    assert fake_openai.requests == []


def test_a_header_from_a_variable_ending_in_a_newline_is_sent_without_it(tmp_path, fake_openai):
    header = 'providers.openai.headers={"X-Team-Token" = "${TEAM_TOKEN}"}'
    fake_openai.enqueue(Reply("Done."))

    result = _run(fake_openai, tmp_path, "-c", header, TASK, TEAM_TOKEN=f"{HEX_KEY}\n")

    assert result.returncode == 0, result.stderr
    assert fake_openai.requests[0].headers["x-team-token"] == HEX_KEY
