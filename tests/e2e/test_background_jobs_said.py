"""A command that leaves a background job running is told that the job was stopped, in
every mode. Unsandboxed, the supervisor said so; in bubblewrap and gVisor the PID
namespace took the job with it silently, and the model's next command failed on a file
the job never wrote (`cat: bg.txt: No such file or directory`)."""

from __future__ import annotations

import re

import pytest
from tests.e2e.test_calculator import run_against, workspace
from tests.fakes.openai_server import Call, Reply
from tests.sandboxes import needs

from lathe.exec.bwrap import check_bubblewrap
from lathe.exec.gvisor import check_gvisor

_LEAVES_A_JOB = 'nohup bash -c "sleep 3; echo x > bg.txt" >/dev/null 2>&1 & echo started'
# How many is a snapshot: `sleep` may not have started yet when the command exits.
_STOPPED = re.compile(
    r"\n\[lathe: the command exited but left (1 background process|2 background processes) "
    r"running, which (was|were) stopped"
)

_MODES = [
    pytest.param(["--approval", "full"], id="full"),
    pytest.param([], id="bubblewrap", marks=needs(check_bubblewrap(), "bubblewrap")),
    pytest.param(["--sandbox", "gvisor"], id="gvisor", marks=needs(check_gvisor(), "gVisor")),
]


def _tool_outputs(server) -> list[str]:
    return [m["content"] for m in server.chat_bodies()[-1]["messages"] if m["role"] == "tool"]


@pytest.mark.parametrize("mode", _MODES)
def test_a_background_job_the_command_left_is_said_to_be_stopped(tmp_path, fake_openai, mode):
    ws = workspace(tmp_path)
    fake_openai.enqueue(Reply(calls=[Call("bash", {"command": _LEAVES_A_JOB})]), Reply("done"))

    result = run_against(fake_openai, ws, tmp_path, *mode, "start it")

    assert result.returncode == 0, result.stderr[-2000:]
    (output,) = _tool_outputs(fake_openai)
    assert output.startswith("started\n")
    assert _STOPPED.search(output), output
    assert output.endswith("[exit code: 0]")


@pytest.mark.parametrize("mode", _MODES)
def test_a_command_that_leaves_nothing_running_gets_no_note(tmp_path, fake_openai, mode):
    ws = workspace(tmp_path)
    command = "sleep 0.2 & wait; echo done"
    fake_openai.enqueue(Reply(calls=[Call("bash", {"command": command})]), Reply("done"))

    result = run_against(fake_openai, ws, tmp_path, *mode, "run it")

    assert result.returncode == 0, result.stderr[-2000:]
    assert _tool_outputs(fake_openai) == ["done\n[exit code: 0]"]
