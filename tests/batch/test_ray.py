"""`lathe batch --executor ray` through the real CLI on a local Ray instance: the same
tasks score as on the local pool, a worker that dies is retried once and then is an
infrastructure error, the driver's results resume (no Ray started when nothing is left),
and Ctrl-C leaves neither a task nor Ray running. Skipped where `ray` is not installed
(`pip install -e '.[dev]'` installs it)."""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import psutil
import pytest
from tests.batch.tasks import cheat, fix, make_task, stuck
from tests.fakes.openai_server import ErrorReply, Hang
from tests.service.scripts import by_marker

pytest.importorskip("ray")

pytestmark = [pytest.mark.waits, pytest.mark.timeout(300)]

NAMES = ["t1", "t2", "t3", "t4", "t5", "t6"]


@pytest.fixture
def ray_tmp():
    """Ray's own folder (RAY_TMPDIR), short: its socket paths must fit 107 bytes."""
    folder = Path(tempfile.mkdtemp(prefix="lray", dir="/tmp"))
    yield folder
    shutil.rmtree(folder, ignore_errors=True)


def _env(tmp_path, ray_tmp):
    # TMPDIR: the copies of tasks whose worker was killed (never cleaned up) stay in here.
    (tmp_path / "tmp").mkdir(exist_ok=True)
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("LATHE_", "OPENAI_", "RAY_"))}  # fmt: skip
    return {**env, "LATHE_HOME": str(tmp_path / "home"), "OPENAI_API_KEY": "sk-test",
            "RAY_TMPDIR": str(ray_tmp), "TMPDIR": str(tmp_path / "tmp")}  # fmt: skip


def _argv(tasks, run, fake):
    return [sys.executable, "-m", "lathe", "batch", str(tasks), "--out", str(run),
            "--workers", "2", "--executor", "ray", "--model", "m",
            "--base-url", fake.base_url, "--max-turns", "8"]  # fmt: skip


def _batch(tmp_path, ray_tmp, tasks, run, fake, **extra_env):
    return subprocess.run(_argv(tasks, run, fake), env={**_env(tmp_path, ray_tmp), **extra_env},
                          capture_output=True, text=True, timeout=240,
                          stdin=subprocess.DEVNULL)  # fmt: skip


def _lines(run: Path) -> list[dict]:
    return [json.loads(line) for line in (run / "results.jsonl").read_text().splitlines()]


def _sessions(ray_tmp: Path) -> list[Path]:
    return sorted((ray_tmp / "ray").glob("session_2*"))


def _left_running(home: Path) -> list[str]:
    """Processes the batch started (each inherits its LATHE_HOME) still alive, Ray's
    included; they get a few seconds to finish dying."""
    deadline = time.monotonic() + 10
    while True:
        found = []
        for process in psutil.process_iter(["pid", "name", "status"]):
            try:
                if process.environ().get("LATHE_HOME") != str(home):
                    continue
            except (psutil.NoSuchProcess, psutil.AccessDenied):
                continue
            if process.info["status"] != psutil.STATUS_ZOMBIE:
                found.append(f"{process.info['pid']} {process.info['name']}")
        if not found or time.monotonic() > deadline:
            return found
        time.sleep(0.2)


def test_the_tasks_run_as_ray_tasks_score_as_locally_and_resume(tmp_path, ray_tmp, fake_openai):
    tasks = tmp_path / "tasks"
    for name in NAMES:
        make_task(tasks, name)
    # t7's setup kills the Ray worker running it (its nearest `ray::` ancestor: the
    # setup runs under lathe's supervisor): Ray runs it again once, then gives up.
    tries = tmp_path / "t7-tries"
    make_task(tasks, "t7")
    spec = json.loads((tasks / "t7" / "task.json").read_text())
    spec["setup"] = f"echo try >> {tries}; " + (
        r"p=$PPID; while [ $p -gt 1 ]; do case $(tr '\0' ' ' < /proc/$p/cmdline) in "
        r"ray::*) kill -9 $p; break;; esac; p=$(cut -d' ' -f4 /proc/$p/stat); done"
    )
    (tasks / "t7" / "task.json").write_text(json.dumps(spec))
    fake_openai.responder = by_marker({
        "Task t1": fix("t1"), "Task t2": fix("t2"), "Task t3": stuck("t3"),
        "Task t4": [ErrorReply(401, "bad key")], "Task t5": cheat("t5"), "Task t6": fix("t6"),
    })  # fmt: skip
    before = {p: p.read_bytes() for p in tasks.rglob("*") if p.is_file()}
    run = tmp_path / "run"

    done = _batch(tmp_path, ray_tmp, tasks, run, fake_openai)

    assert done.returncode == 3, done.stderr  # two tasks were not measured
    assert "lathe: 2 of 7 tasks ended in an error" in done.stderr
    lines = {line["id"]: line for line in _lines(run)}
    assert sorted(lines) == [*NAMES, "t7"]  # one line a task
    assert {i for i, line in lines.items() if line["solved"]} == {"t1", "t2", "t6"}
    assert lines["t3"]["status"] == "unsolved" and lines["t3"]["lathe_status"] == "stuck"
    assert lines["t4"]["status"] == "error" and lines["t4"]["error_kind"] == "provider"
    assert lines["t5"]["lathe_status"] == "verified"
    assert lines["t5"]["status"] == "unsolved" and lines["t5"]["false_verified"] is True
    assert lines["t7"]["status"] == "error" and lines["t7"]["error_kind"] == "infrastructure"
    assert lines["t7"]["reason"].startswith("the Ray worker died: ")
    assert tries.read_text() == "try\ntry\n"  # retried once, not more
    # The work came back through the object store: diffs and transcripts, by the driver.
    assert "== -1" in (run / lines["t5"]["diff_path"]).read_text()
    assert "a + b" in (run / lines["t1"]["diff_path"]).read_text()
    assert (run / lines["t1"]["transcript_path"]).read_text()
    # The worker had the driver's environment (its LATHE_HOME).
    assert Path(lines["t1"]["session_file"]).is_relative_to(tmp_path / "home")
    assert Path(lines["t1"]["session_file"]).is_file()
    assert {p: p.read_bytes() for p in tasks.rglob("*") if p.is_file()} == before
    assert json.loads((run / "manifest.json").read_text())["executor"] == "ray"
    assert _left_running(tmp_path / "home") == []  # the local Ray shut down with the batch
    assert len(_sessions(ray_tmp)) == 1

    # The same command again: everything finished, nothing runs, no Ray starts.
    requests = len(fake_openai.requests)
    again = _batch(tmp_path, ray_tmp, tasks, run, fake_openai)
    assert again.returncode == 3, again.stderr
    assert "0 to run" in again.stderr
    assert len(fake_openai.requests) == requests
    assert len(_lines(run)) == 7
    assert len(_sessions(ray_tmp)) == 1


# SIGTERM (a cancelled CI job) as Ctrl-C: Ray's own handler once dumped a stack and
# exited 1 with no line of lathe's.
@pytest.mark.parametrize(("stop", "code"), [(signal.SIGINT, 130), (signal.SIGTERM, 143)])
def test_ctrl_c_cancels_the_ray_tasks_which_run_again_next_time(
    tmp_path, ray_tmp, fake_openai, stop, code
):
    tasks = tmp_path / "tasks"
    for name in NAMES[:3]:
        make_task(tasks, name)
    # t1 finishes (two requests); t2 and t3 then wait on the model when interrupted.
    fake_openai.responder = by_marker(
        {"Task t1": fix("t1"), "Task t2": [Hang(60)], "Task t3": [Hang(60)]}
    )
    run = tmp_path / "run"
    process = subprocess.Popen(_argv(tasks, run, fake_openai), env=_env(tmp_path, ray_tmp),
                               stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                               stdin=subprocess.DEVNULL, start_new_session=True)  # fmt: skip
    deadline = time.monotonic() + 120
    while not ((run / "results.jsonl").exists() and len(fake_openai.requests) >= 3):
        assert time.monotonic() < deadline, "the tasks never reached the model"
        assert process.poll() is None, process.stderr.read()
        time.sleep(0.2)
    process.send_signal(stop)
    _, stderr = process.communicate(timeout=60)

    assert process.returncode == code, stderr
    assert stderr.splitlines()[-1].startswith("lathe: "), stderr
    assert [line["id"] for line in _lines(run)] == ["t1"]
    assert _left_running(tmp_path / "home") == []  # the lathe runs died with their workers

    fake_openai.responder = by_marker({f"Task {n}": fix(n) for n in NAMES[:3]})
    done = _batch(tmp_path, ray_tmp, tasks, run, fake_openai)

    assert done.returncode == 0, done.stderr
    assert "2 to run" in done.stderr
    lines = _lines(run)
    assert lines[0]["id"] == "t1"  # kept first, as it was
    assert sorted(line["id"] for line in lines) == NAMES[:3]
    assert all(line["solved"] for line in lines)


_CLUSTER = """
import sys, ray
context = ray.init(address="local", num_cpus=2, include_dashboard=False, log_to_driver=False)
print(context.address_info["gcs_address"], flush=True)
sys.stdin.read()  # up until the test closes its stdin
"""


def test_an_existing_cluster_gets_the_drivers_environment_and_keeps_running(
    tmp_path, ray_tmp, fake_openai
):
    # A cluster started elsewhere, whose workers know nothing of the batch's environment.
    bare = {k: v for k, v in _env(tmp_path, ray_tmp).items()
            if k not in ("LATHE_HOME", "OPENAI_API_KEY")}  # fmt: skip
    cluster = subprocess.Popen([sys.executable, "-c", _CLUSTER], env=bare, text=True,
                               stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                               stderr=subprocess.DEVNULL)  # fmt: skip
    try:
        address = cluster.stdout.readline().strip()
        assert address, "the cluster did not start"
        make_task(tmp_path / "tasks", "t1")
        fake_openai.responder = by_marker({"Task t1": fix("t1")})

        done = _batch(tmp_path, ray_tmp, tmp_path / "tasks", tmp_path / "run", fake_openai,
                      RAY_ADDRESS=address, RAY_AUTH_MODE="token")  # fmt: skip

        assert done.returncode == 0, done.stderr
        [line] = _lines(tmp_path / "run")
        assert line["solved"] is True
        assert Path(line["session_file"]).is_relative_to(tmp_path / "home")  # forwarded
        assert cluster.poll() is None  # the batch disconnected; it did not stop the cluster
    finally:
        cluster.stdin.close()
        cluster.wait(timeout=60)


def test_an_address_where_nothing_listens_is_one_line_at_once(tmp_path, ray_tmp, fake_openai):
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        address = f"127.0.0.1:{probe.getsockname()[1]}"  # closed once the block ends
    make_task(tmp_path / "tasks", "t1")

    started = time.monotonic()
    done = _batch(tmp_path, ray_tmp, tmp_path / "tasks", tmp_path / "run", fake_openai,
                  RAY_ADDRESS=address)  # fmt: skip

    assert done.returncode == 2
    assert done.stderr.splitlines()[-1].startswith(
        f"lathe: cannot reach the Ray cluster at {address}: "
    )
    assert time.monotonic() - started < 30  # not Ray's minutes of retrying
    assert not (tmp_path / "run" / "results.jsonl").exists()
