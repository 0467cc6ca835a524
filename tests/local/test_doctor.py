"""`lathe doctor` on the embedded local model, named as `lathe run` takes it (`--model
local`, `local/0.5b`, LATHE_MODEL, the config's `model`), run as a user runs it: with
LATHE_HOME in tmp_path and the fake llama-server. Doctor checks what a run would find,
with the run's own words, and starts no server to do it."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from lathe.local.models import DEFAULT_MODEL, MODELS, model_path

from .conftest import lathe_local

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="POSIX process groups")

_CHOSEN_ELSEWHERE = ("LATHE_MODEL", "LATHE_BASE_URL", "LATHE_API_KEY", "LATHE_CONFIG")


def lathe(*args: str, cwd: Path, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    environ = {k: v for k, v in os.environ.items() if k not in _CHOSEN_ELSEWHERE}
    environ.update({"LATHE_CONFIG": os.devnull, "NO_COLOR": "1", **(env or {})})
    return subprocess.run(
        [sys.executable, "-m", "lathe", *args],
        cwd=cwd,
        env=environ,
        capture_output=True,
        text=True,
        timeout=60,
        stdin=subprocess.DEVNULL,
        start_new_session=True,
    )


def line(output: str, name: str) -> str:
    """The check's line and its fix line, if any."""
    lines = output.splitlines()
    at = next(i for i, text in enumerate(lines) if text.split()[1:2] == [name])
    fix = lines[at + 1].strip() if at + 1 < len(lines) and lines[at + 1].startswith(" ") else ""
    return lines[at] + (f"\n{fix}" if fix else "")


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    folder = tmp_path / "ws"
    folder.mkdir()
    return folder


@pytest.mark.parametrize(
    ("how", "name"),
    [("--model", DEFAULT_MODEL), ("--model", "0.5b"), ("LATHE_MODEL", "1.5b"), ("config", "")],
    ids=["flag", "flag-0.5b", "env", "config"],
)
def test_doctor_takes_the_local_model_as_run_does_and_says_it_is_not_installed(
    ws: Path, tmp_path: Path, how: str, name: str
) -> None:
    chosen = "local" if name in ("", DEFAULT_MODEL) else f"local/{name}"
    args: list[str] = []
    env: dict[str, str] = {}
    if how == "--model":
        args = ["--model", chosen]
    elif how == "LATHE_MODEL":
        env["LATHE_MODEL"] = chosen
    else:
        config = tmp_path / "config.toml"
        config.write_text(f'model = "{chosen}"\n')
        env["LATHE_CONFIG"] = str(config)

    doctor = lathe("doctor", *args, cwd=ws, env=env)
    run = lathe("run", *args, "say hi", cwd=ws, env=env)

    assert doctor.returncode == 1, doctor.stdout + doctor.stderr
    said = run.stderr.strip().removeprefix("lathe: ")
    model = name or DEFAULT_MODEL
    assert said.startswith(f"The local {model} model is not installed. Run `lathe local install")
    assert line(doctor.stdout, "model") == (
        f"FAIL  model      {said}\nfix: run `lathe local install --model {model}`"
    )
    assert "endpoint" not in doctor.stdout and doctor.stderr == ""


def test_doctor_names_a_local_model_there_is_none_of(ws: Path) -> None:
    doctor = lathe("doctor", "--model", "local/9b", cwd=ws)

    assert doctor.returncode == 1
    known = ", ".join(f"local/{name}" for name in MODELS)
    assert line(doctor.stdout, "model") == (
        f"FAIL  model      Unknown local model 'local/9b'; known: local, {known}.\n"
        "fix: choose a model with --model"
    )


def test_an_installed_model_without_a_warm_server_is_ready_and_nothing_is_started(
    installed: Path, fake_llama: Path, ws: Path, tmp_path: Path, lathe_home: Path
) -> None:
    pid_file = tmp_path / "server.pid"

    doctor = lathe("doctor", "--model", "local", "--live", cwd=ws,
                   env={"FAKE_LLAMA_PID": str(pid_file)})  # fmt: skip

    assert doctor.returncode == 0, doctor.stdout + doctor.stderr
    wire_id = MODELS[DEFAULT_MODEL].wire_id
    assert line(doctor.stdout, "model") == (
        f"ok    model      local/{DEFAULT_MODEL} ({wire_id}), installed at {installed}"
    )
    assert line(doctor.stdout, "api") == "ok    api key    the local model needs no key"
    assert line(doctor.stdout, "server") == f"ok    server     llama-server {fake_llama}"
    assert line(doctor.stdout, "endpoint") == (
        "ok    endpoint   no warm server: a run starts llama-server for itself (`lathe local "
        "start` keeps one warm between runs)"
    )
    assert line(doctor.stdout, "live") == (
        "warn  live       not checked: doctor starts no server to check\n"
        "fix: run `lathe local start`, then `lathe doctor --live` again"
    )
    assert not pid_file.exists(), "doctor started llama-server"
    assert not (lathe_home / "local" / "server.json").exists()


def test_a_missing_llama_server_fails_in_the_words_of_a_run(
    installed: Path, ws: Path, tmp_path: Path
) -> None:
    env = {"LATHE_LLAMA_SERVER": str(tmp_path / "no-llama-server")}

    doctor = lathe("doctor", "--model", "local", cwd=ws, env=env)
    run = lathe("run", "--model", "local", "say hi", cwd=ws, env=env)

    assert doctor.returncode == 1
    said = run.stderr.strip().removeprefix("lathe: ")
    assert said.startswith("LATHE_LLAMA_SERVER is set to "), run.stderr
    assert line(doctor.stdout, "server") == (
        f"FAIL  server     {said}\nfix: set LATHE_LLAMA_SERVER to a llama-server binary, or "
        "unset it"
    )


def test_a_warm_server_is_checked_and_asked_with_live_and_one_not_answering_warned(
    installed: Path, fake_llama: Path, servers: list[int], ws: Path, lathe_home: Path
) -> None:
    assert lathe_local("start").returncode == 0
    warm = json.loads((lathe_home / "local" / "server.json").read_text())
    servers.append(warm["pid"])
    url = f"http://127.0.0.1:{warm['port']}/v1"

    doctor = lathe("doctor", "--model", f"local/{DEFAULT_MODEL}", "--live", cwd=ws)

    assert doctor.returncode == 0, doctor.stdout + doctor.stderr
    assert line(doctor.stdout, "endpoint") == (
        f"ok    endpoint   the warm server (pid {warm['pid']}) answers at {url}"
    )
    wire_id = MODELS[DEFAULT_MODEL].wire_id
    assert line(doctor.stdout, "live").startswith(f"ok    live       {wire_id} replied 'hello' in")

    gone = {"LATHE_LLAMA_SERVER": str(ws / "no-llama-server")}  # a run still has the warm one
    without = lathe("doctor", "--model", "local", cwd=ws, env=gone)
    assert without.returncode == 0, without.stdout
    assert line(without.stdout, "server") == (
        f"warn  server     LATHE_LLAMA_SERVER is set to {ws / 'no-llama-server'}, which does "
        "not exist; set it to a llama-server binary, or unset it to use the one `lathe local "
        "install` builds; until it stops, runs use the warm server\n"
        "fix: set LATHE_LLAMA_SERVER to a llama-server binary, or unset it"
    )

    other = MODELS["0.5b"]  # installed too, and not what the warm server serves
    with model_path(other).open("wb") as f:
        f.truncate(other.size)
    model_path(other).with_name(f"{other.filename}.sha256").write_text(other.sha256)
    elsewhere = lathe("doctor", "--model", "local/0.5b", cwd=ws)
    assert line(elsewhere.stdout, "endpoint") == (
        f"ok    endpoint   no warm server for local/0.5b (the warm one serves local/"
        f"{DEFAULT_MODEL}): a run starts llama-server for itself (`lathe local start` keeps "
        "one warm between runs)"
    )

    os.kill(warm["pid"], signal.SIGSTOP)  # alive, answering nothing
    stopped = lathe("doctor", "--model", "local", cwd=ws)

    assert stopped.returncode == 0, stopped.stdout
    assert line(stopped.stdout, "endpoint") == (
        f"warn  endpoint   the warm server (pid {warm['pid']}) at {url} is not answering, so "
        "a run starts llama-server for itself\n"
        "fix: `lathe local start` replaces it, `lathe local stop` stops it"
    )
    os.kill(warm["pid"], signal.SIGCONT)
    assert lathe_local("stop").returncode == 0
