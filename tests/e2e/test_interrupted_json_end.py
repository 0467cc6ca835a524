"""An interrupted `lathe run --json` ends its stream as the exit code says, against the
fake model: SIGTERM (how CI cancels) during a command left the stream at `tool_started`,
with no `tool_finished` and no `run_finished`, exit 143; Ctrl-C between attempts left
the last line an attempt's `failed`, exit 130. Now the last line is `run_finished`
`interrupted`, naming the signal, after a `tool_finished` for the call it cut."""

from __future__ import annotations

import json
import signal
import subprocess
from pathlib import Path

from tests.e2e.test_run_edges import TASK, _argv, _env, _workspace
from tests.fakes.openai_server import Call, Reply
from tests.waiting import while_running


def _lines(stdout: str) -> list[dict]:
    return [json.loads(line) for line in stdout.splitlines() if line.strip()]


def _stopped_in_a_command(fake_openai, tmp_path: Path, number: int, *args: str):
    """A run stopped by signal `number` while its command sleeps: (exit code, stdout,
    stderr)."""
    ws = _workspace(tmp_path)
    started = ws / "command-started"
    command = "touch command-started; sleep 60"
    fake_openai.enqueue(Reply(calls=[Call("bash", {"command": command}, id="call_b")]))
    process = subprocess.Popen(
        _argv(fake_openai, ws, "--approval", "full", *args, TASK), cwd=tmp_path,
        env=_env(tmp_path), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        stdin=subprocess.DEVNULL, text=True,
    )  # fmt: skip
    while_running(process, started.exists, "the command never ran")
    process.send_signal(number)
    out, errors = process.communicate(timeout=60)
    return process.returncode, out, errors


def test_sigterm_during_a_command_ends_the_stream_interrupted(tmp_path, fake_openai):
    code, out, errors = _stopped_in_a_command(fake_openai, tmp_path, signal.SIGTERM, "--json")

    assert code == 143, errors
    *earlier, cut, end = _lines(out)
    assert any(e["type"] == "run_started" for e in earlier)
    assert end["type"] == "run_finished" and end["status"] == "interrupted", end
    assert "SIGTERM" in end["reason"], end
    assert end["turns"] == 1 and end["usage"]["input_tokens"] == 12, end
    assert cut["type"] == "tool_finished" and cut["call_id"] == "call_b", cut
    assert cut["is_error"] and "interrupted" in cut["output"], cut
    assert sum(1 for e in earlier if e["type"] == "tool_finished") == 0


def test_ctrl_c_during_a_command_ends_the_stream_interrupted(tmp_path, fake_openai):
    code, out, errors = _stopped_in_a_command(fake_openai, tmp_path, signal.SIGINT, "--json")

    assert code == 130, errors
    end = _lines(out)[-1]
    assert end["type"] == "run_finished" and end["status"] == "interrupted", end
    assert "Ctrl-C" in end["reason"], end


def test_the_terminal_output_of_an_interrupted_run_claims_no_end(tmp_path, fake_openai):
    code, out, errors = _stopped_in_a_command(fake_openai, tmp_path, signal.SIGTERM)

    assert code == 143, errors
    assert errors.splitlines()[-1].startswith("lathe: terminated; resume with"), errors
    assert "status:" not in errors and "interrupted" not in out, errors


def test_ctrl_c_between_attempts_ends_the_stream_interrupted(tmp_path, fake_openai):
    ws = _workspace(tmp_path)
    asked = []

    def respond(body) -> Reply:
        asked.append(body)
        if len(asked) == 1:  # the first attempt: done, which the check fails
            return Reply("done")
        return Reply(calls=[Call("bash", {"command": "sleep 60"})])  # the next: keeps busy

    fake_openai.responder = respond
    process = subprocess.Popen(
        _argv(fake_openai, ws, "--json", "--approval", "full", "--verify", "false",
              "--attempts", "3", "--max-turns", "1", TASK),
        cwd=tmp_path, env=_env(tmp_path), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        stdin=subprocess.DEVNULL, text=True,
    )  # fmt: skip
    assert process.stdout is not None
    seen = []
    for line in process.stdout:  # until the first attempt's end
        seen.append(json.loads(line))
        if seen[-1]["type"] == "run_finished":
            break
    assert seen and seen[-1]["status"] == "failed", seen

    process.send_signal(signal.SIGINT)
    out, errors = process.communicate(timeout=60)

    assert process.returncode == 130, errors
    ends = [e for e in seen + _lines(out) if e["type"] == "run_finished"]
    assert [e["status"] for e in ends] == ["failed", "interrupted"], ends
    assert _lines(out)[-1]["type"] == "run_finished"
    for session in (tmp_path / "home" / "sessions").rglob("*.jsonl"):  # each ends once
        entries = [json.loads(line) for line in session.read_text().splitlines()]
        assert sum(1 for e in entries if e["type"] == "run_end") <= 1, session


def _stopped_in_its_stop_hook(fake_openai, tmp_path: Path, *args: str):
    """A run whose model finished, stopped by Ctrl-C while its stop hook runs: (exit
    code, stdout, stderr). The run's end was held then, and shown as it stopped."""
    ws = _workspace(tmp_path)
    (ws / ".lathe").mkdir()
    hook = '[[hooks.stop]]\ncommand = "touch hook-started; sleep 60"\n'
    (ws / ".lathe" / "config.toml").write_text(hook)
    fake_openai.enqueue(Reply("done"))
    process = subprocess.Popen(
        _argv(fake_openai, ws, "--trust-project", *args, TASK), cwd=tmp_path,
        env=_env(tmp_path), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        stdin=subprocess.DEVNULL, text=True,
    )  # fmt: skip
    while_running(process, (ws / "hook-started").exists, "the stop hook never ran")
    process.send_signal(signal.SIGINT)
    out, errors = process.communicate(timeout=60)
    return process.returncode, out, errors


def test_an_end_held_when_the_run_is_stopped_is_not_shown(tmp_path, fake_openai):
    code, out, errors = _stopped_in_its_stop_hook(fake_openai, tmp_path, "--json")

    assert code == 130, errors
    ends = [e for e in _lines(out) if e["type"] == "run_finished"]
    assert [e["status"] for e in ends] == ["interrupted"], ends
    assert _lines(out)[-1] == ends[-1]


def test_an_end_held_when_the_run_is_stopped_is_not_claimed_on_the_terminal(tmp_path, fake_openai):
    code, _, errors = _stopped_in_its_stop_hook(fake_openai, tmp_path)

    assert code == 130, errors
    assert "status:" not in errors, errors
    assert errors.splitlines()[-1].startswith("lathe: interrupted; resume with"), errors
