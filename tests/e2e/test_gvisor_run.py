"""`lathe run --sandbox gvisor` and `permissions.sandbox.engine`: the model's commands and
the verify command run under gVisor's kernel, with the same rules as in bubblewrap
(issue 17, item 7)."""

from __future__ import annotations

import os
import subprocess
import sys

from tests.e2e.test_calculator import run_against, workspace
from tests.fakes.openai_server import Call, Reply
from tests.sandboxes import needs
from tests.waiting import while_running

from lathe.exec.gvisor import check_gvisor

pytestmark = needs(check_gvisor(), "gVisor")


def _tool_outputs(server) -> list[str]:
    return [m["content"] for m in server.chat_bodies()[-1]["messages"] if m["role"] == "tool"]


def test_the_flag_runs_commands_and_the_verify_command_under_gvisor(tmp_path, fake_openai):
    ws = workspace(tmp_path)
    fake_openai.enqueue(
        Reply(calls=[Call("bash", {"command": "dmesg | head -1; echo made > made.txt"})]),
        Reply("done"),
    )

    result = run_against(
        fake_openai, ws, tmp_path, "--sandbox", "gvisor",
        "--verify", "dmesg | grep -q gVisor", "look around",
    )  # fmt: skip

    assert result.returncode == 0, result.stderr[-2000:]
    (output,) = _tool_outputs(fake_openai)
    assert "Starting gVisor" in output
    assert (ws / "made.txt").read_text() == "made\n"  # the workspace is the host's folder
    assert "verified" in result.stderr  # the verify command found gVisor's kernel too


def test_the_config_key_chooses_gvisor_and_bubblewrap_stays_the_default(tmp_path, fake_openai):
    ws = workspace(tmp_path)
    probe = Call("bash", {"command": "dmesg 2>&1 | head -1"})
    fake_openai.enqueue(Reply(calls=[probe]), Reply("done"), Reply(calls=[probe]), Reply("done"))

    by_default = run_against(fake_openai, ws, tmp_path, "look")
    (ws / ".lathe").mkdir(exist_ok=True)
    (ws / ".lathe" / "config.toml").write_text('[permissions.sandbox]\nengine = "gvisor"\n')
    configured = run_against(fake_openai, ws, tmp_path, "--trust-project", "look")

    assert by_default.returncode == 0 and configured.returncode == 0, configured.stderr[-2000:]
    first, second = (
        [m["content"] for m in body["messages"] if m["role"] == "tool"]
        for body in (fake_openai.chat_bodies()[1], fake_openai.chat_bodies()[3])
    )
    assert "gVisor" not in first[0]
    assert "Starting gVisor" in second[0]


def test_a_child_gets_a_gvisor_sandbox_of_its_own_bound_to_its_worktree(tmp_path, fake_openai):
    from tests.subagents.test_task_tool import Script, _project, _run, _task

    ws = _project(tmp_path)
    probe = "dmesg | head -1; pwd; echo changed > c.txt"
    fake_openai.responder = Script(
        parent=[Reply(calls=[_task("g", "[child G] probe")]), Reply("done")],
        children={"[child G]": [Reply(calls=[Call("bash", {"command": probe})]), Reply("ok")]},
    )

    result = _run(fake_openai, ws, tmp_path, "--sandbox", "gvisor", "go")

    assert result.returncode == 0, result.stderr[-2000:]
    child = [b for b in fake_openai.chat_bodies() if "[child G]" in str(b["messages"][1:2])]
    output = next(m["content"] for m in child[-1]["messages"] if m["role"] == "tool")
    assert "Starting gVisor" in output
    assert str(tmp_path / "home" / "worktrees") in output  # its cwd: its own worktree
    assert (ws / "c.txt").read_text() == "changed\n"  # and its change came back


def _argv(fake_openai, ws, *args: str) -> list[str]:
    return [sys.executable, "-m", "lathe", "run", "--model", "m", "--base-url",
            fake_openai.base_url, "-C", str(ws), "--sandbox", "gvisor", *args]  # fmt: skip


def _env(tmp_path, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("LATHE_", "OPENAI_"))}
    return env | {"OPENAI_API_KEY": "sk-test", "LATHE_HOME": str(tmp_path / "home"), **extra}


def test_a_temp_dir_inside_a_private_folder_still_runs_commands(tmp_path, fake_openai):
    # pam_tmpdir's /tmp/user/1000 (0700): runsc's sandbox, which drops root, could not
    # read the bundle there, and every command was refused as "runsc needs root".
    private = tmp_path / "private"
    (private / "tmp").mkdir(parents=True)
    private.chmod(0o700)
    ws = workspace(tmp_path)
    fake_openai.enqueue(
        Reply(calls=[Call("bash", {"command": "echo ran > ran.txt"})]), Reply("done")
    )

    done = subprocess.run(
        _argv(fake_openai, ws, "run it"), cwd=tmp_path, capture_output=True, text=True,
        env=_env(tmp_path, TMPDIR=str(private / "tmp")), timeout=120, stdin=subprocess.DEVNULL,
    )  # fmt: skip

    assert done.returncode == 0, done.stderr[-2000:]
    assert (ws / "ran.txt").exists(), done.stderr[-2000:]


def test_the_scratch_folders_of_a_killed_lathe_are_removed_by_the_next_one(tmp_path, fake_openai):
    # kill -9 left the OCI bundle (the command, its environment, runsc's state) and the
    # masked file's folder in the temp dir for good.
    from lathe.exec.scratch import scratch_base

    ws = workspace(tmp_path)
    (ws / "secret.txt").write_text("hidden\n")
    argv = _argv(fake_openai, ws, "--deny", "read(secret.txt)")
    # Nothing more is queued: the next run's first request must find its own replies.
    fake_openai.enqueue(Reply(calls=[Call("bash", {"command": "touch started; sleep 300"})]))
    killed = subprocess.Popen([*argv, "wait"], cwd=tmp_path, env=_env(tmp_path),
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                              stdin=subprocess.DEVNULL)  # fmt: skip
    try:
        while_running(killed, (ws / "started").exists, "the command never started")
    finally:
        killed.kill()
        killed.wait(timeout=10)
    base = scratch_base(reachable=True)
    left = sorted(p.name.split("-")[1] for p in base.glob(f"lathe-*-{killed.pid}-*"))
    assert left == ["gvisor", "mask"], left  # what a kill -9 leaves

    fake_openai.enqueue(Reply(calls=[Call("bash", {"command": "true"})]), Reply("done"))
    again = subprocess.run([*argv, "again"], cwd=tmp_path, env=_env(tmp_path),
                           capture_output=True, text=True, timeout=120,
                           stdin=subprocess.DEVNULL)  # fmt: skip

    assert again.returncode == 0, again.stderr[-2000:]
    assert list(base.glob(f"lathe-*-{killed.pid}-*")) == []
