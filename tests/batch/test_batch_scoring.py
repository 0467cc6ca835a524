"""`lathe batch`'s scoring through the real CLI against the scripted fake model: the
task's own commands (setup, verify) run with no more rights than lathe's run gave the
agent's code: no key, the run's sandbox, nothing left running after them."""

from __future__ import annotations

import os
import signal
import subprocess
import time
import uuid
from pathlib import Path

import pytest
from tests.batch.tasks import (
    BROKEN,
    VERIFY,
    batch_argv,
    batch_env,
    fix,
    make_task,
    result_lines,
    run_batch,
)
from tests.fakes.openai_server import Call, Reply
from tests.sandboxes import needs
from tests.service.scripts import by_marker

from lathe.exec.bwrap import check_bubblewrap

KEY = "sk-test-" + "0123456789abcdef" * 2  # long enough to be masked, were it printed
FULL = ("--lathe-arg=--approval", "--lathe-arg=full")

LEAKY = """import os
import pathlib

key = os.environ.get("OPENAI_API_KEY", "none")
try:
    pathlib.Path({outside!r}).write_text(key)
except OSError:
    pass
print("KEY=" + key)
print("DSN=postgres://batch:hunter2hunter2@db/x")


def add(a, b):
    return a + b"""


def _env(tmp_path: Path) -> dict[str, str]:
    return batch_env(tmp_path, key=KEY)


@pytest.mark.parametrize(
    "mode",
    [pytest.param((), marks=needs(check_bubblewrap(), "bubblewrap"), id="sandboxed"),
     pytest.param(FULL, id="full")],
)  # fmt: skip
def test_the_scoring_check_gets_no_key_and_no_more_rights_than_the_run(tmp_path, fake_openai, mode):
    # The agent's code wrote the key outside the workspace and printed it: lathe's own
    # check (in the sandbox, keys hidden) could not, the batch's scoring (neither) could.
    outside = tmp_path / "outside" / "key.txt"
    outside.parent.mkdir()
    make_task(tmp_path / "tasks", "t1", verify=f'python -c "import calc" && {VERIFY}')
    leak = LEAKY.format(outside=str(outside))
    fake_openai.responder = by_marker({"Task t1": [
        Reply(calls=[Call("edit", {"path": "calc.py", "old_string": BROKEN.strip(),
                                   "new_string": leak})]),
        Reply("t1: fixed."),
    ]})  # fmt: skip
    run = tmp_path / "run"

    done = run_batch(tmp_path, tmp_path / "tasks", run, fake_openai, *mode, env=_env(tmp_path))

    assert done.returncode == 0, done.stderr
    [line] = result_lines(run)
    assert line["solved"] is True, line
    assert "KEY=none" in line["verify_tail"], line["verify_tail"]
    assert "hunter2hunter2" not in line["verify_tail"]  # a credential it printed: masked
    for record in run.rglob("*"):
        if record.is_file():
            assert KEY not in record.read_text(errors="replace"), record
    if mode == FULL:  # no sandbox in the run: none when scoring either, but no key
        assert outside.read_text() == "none"
    else:  # the run's sandbox kept it from writing outside the workspace: so does scoring
        assert not outside.exists()


def test_nothing_the_setup_or_verify_command_starts_outlives_the_task(tmp_path, fake_openai):
    # `setsid sleep &` left the process group the batch killed: it ran on, reparented
    # to init, after the batch had ended.
    tag = str(4000 + uuid.uuid4().int % 5000)
    setup, verify = f"setsid sleep 1{tag} >/dev/null 2>&1 &", f"setsid sleep 2{tag} & {VERIFY}"
    make_task(tmp_path / "tasks", "t1", setup=setup, verify=verify)
    fake_openai.responder = by_marker({"Task t1": fix("t1")})
    run = tmp_path / "run"
    try:
        done = run_batch(tmp_path, tmp_path / "tasks", run, fake_openai, *FULL)

        assert done.returncode == 0, done.stderr
        assert result_lines(run)[0]["solved"] is True
        assert _sleeping(tag) == []
    finally:
        for pid in _sleeping(tag):
            os.kill(pid, 9)


def test_ctrl_c_while_the_check_runs_ends_it_and_the_batch_at_once(tmp_path, fake_openai):
    tag = str(4000 + uuid.uuid4().int % 5000)
    # Only the batch's check sleeps (its copy is `checked`; lathe's own runs in `work`).
    verify = f'case "$PWD" in */checked) sleep 3{tag};; esac; {VERIFY}'
    make_task(tmp_path / "tasks", "t1", verify=verify)
    fake_openai.responder = by_marker({"Task t1": fix("t1")})
    scratch = tmp_path / "tmp"
    scratch.mkdir()
    argv = batch_argv(tmp_path / "tasks", tmp_path / "run", fake_openai)
    process = subprocess.Popen(argv, env={**batch_env(tmp_path), "TMPDIR": str(scratch)},
                               stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                               stdin=subprocess.DEVNULL, text=True)  # fmt: skip
    try:
        deadline = time.monotonic() + 120
        while not _sleeping(tag):
            assert process.poll() is None and time.monotonic() < deadline, "no check ran"
            time.sleep(0.2)

        process.send_signal(signal.SIGINT)
        _, errors = process.communicate(timeout=30)

        assert process.returncode == 130, errors
        assert _sleeping(tag) == []
        assert list(scratch.glob("lathe-task-*")) == [], errors
        assert not (tmp_path / "run" / "results.jsonl").exists()  # it runs next time
    finally:
        process.kill()
        for pid in _sleeping(tag):
            os.kill(pid, 9)


def _sleeping(tag: str) -> list[int]:
    """The `sleep 1TAG`, `sleep 2TAG` and `sleep 3TAG` processes alive."""
    ours = {f"{n}{tag}".encode() for n in "123"}
    found = []
    for proc in Path("/proc").glob("[0-9]*"):
        try:
            argv = (proc / "cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if argv[0] == b"sleep" and len(argv) > 1 and argv[1] in ours:
            found.append(int(proc.name))
    return found
