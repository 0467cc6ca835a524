"""Edges of a headless run, each reproduced on landed main with the real CLI.

- a reply cut by the output limit had its tool calls "repaired" and run: half a line
  was written to the file;
- a kill -9 during the baseline verify lost the task: `--continue` resumed without it;
- an empty model reply ended the run with exit 0, "unverified" and no answer;
- a verify command that cannot run (exit 127) spent model calls until the run was stuck.
"""

from __future__ import annotations

import contextlib
import json
import os
import select
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from tests.fakes.openai_server import Call, Hang, Reply, server_error, unauthorized
from tests.sandboxes import needs
from tests.waiting import while_running

from lathe.exec.bwrap import check_bubblewrap

TASK = "Rename the variable in app.py"


def _env(tmp_path: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("LATHE_", "OPENAI_"))}
    env.update({"OPENAI_API_KEY": "sk-test", "LATHE_HOME": str(tmp_path / "home")})
    return env


def _argv(server, ws: Path, *args: str) -> list[str]:
    return [sys.executable, "-m", "lathe", "run", "--model", "m", "--base-url",
            server.base_url, "-C", str(ws), *args]  # fmt: skip


def lathe_run(server, ws: Path, tmp_path: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        _argv(server, ws, *args), cwd=tmp_path, env=_env(tmp_path), capture_output=True,
        text=True, timeout=120, stdin=subprocess.DEVNULL,
    )  # fmt: skip


@contextlib.contextmanager
def run_in_its_baseline_check(server, ws: Path, tmp_path: Path) -> Iterator[subprocess.Popen]:
    """A `lathe run` (full mode) held inside its baseline verify, which sleeps; it is
    killed with SIGKILL when the block ends."""
    started = tmp_path / f"baseline-started-{time.monotonic_ns()}"
    process = subprocess.Popen(
        _argv(server, ws, "--approval", "full", "--verify", f"touch {started}; sleep 60", TASK),
        cwd=tmp_path, env=_env(tmp_path), stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL, stdin=subprocess.DEVNULL, start_new_session=True,
    )  # fmt: skip
    try:
        deadline = time.monotonic() + 60
        while not started.exists() and time.monotonic() < deadline:
            time.sleep(0.1)
        assert started.exists(), "the baseline verify never started"
        yield process
    finally:
        os.killpg(process.pid, signal.SIGKILL)
        process.wait()


def _workspace(tmp_path: Path) -> Path:
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "app.py").write_text("value = 1\nprint(value)\n")
    return ws


def test_tool_calls_of_a_reply_cut_by_the_output_limit_are_not_run(tmp_path, fake_openai):
    ws = _workspace(tmp_path)
    cut = '{"path": "app.py", "old_string": "value = 1", "new_string": "total = 1\\npri'
    fake_openai.enqueue(
        Reply(calls=[Call("edit", cut)], finish_reason="length"),
        Reply("I will try a smaller step."),
    )

    result = lathe_run(fake_openai, ws, tmp_path, TASK)

    assert result.returncode == 0, result.stderr
    assert (ws / "app.py").read_text() == "value = 1\nprint(value)\n"
    second = fake_openai.chat_bodies()[1]["messages"]
    tool_results = [m for m in second if m["role"] == "tool"]
    assert len(tool_results) == 1
    assert "cut off" in tool_results[0]["content"]
    assert "smaller" in tool_results[0]["content"]


def test_a_kill_during_the_baseline_check_keeps_the_task_for_continue(tmp_path, fake_openai):
    ws = _workspace(tmp_path)
    with run_in_its_baseline_check(fake_openai, ws, tmp_path):
        pass  # killed there
    fake_openai.enqueue(Reply("Carrying on."))

    result = lathe_run(fake_openai, ws, tmp_path, "--continue", "-c", "agent.verify_first=false")

    assert result.returncode == 0, result.stderr
    first_user = next(m for m in fake_openai.chat_bodies()[0]["messages"] if m["role"] == "user")
    assert TASK in first_user["content"]


def test_an_empty_reply_is_asked_again_once(tmp_path, fake_openai):
    ws = _workspace(tmp_path)
    fake_openai.enqueue(Reply(""), Reply("The answer."))

    result = lathe_run(fake_openai, ws, tmp_path, "--json", TASK)

    assert result.returncode == 0, result.stderr
    events = [json.loads(line) for line in result.stdout.splitlines()]
    assert events[-1]["type"] == "run_finished"
    assert events[-1]["answer"] == "The answer."
    bodies = fake_openai.chat_bodies()
    assert len(bodies) == 2
    assert [m["role"] for m in bodies[1]["messages"]] == ["system", "user"]


def test_two_empty_replies_end_the_run_with_an_honest_status(tmp_path, fake_openai):
    ws = _workspace(tmp_path)
    fake_openai.enqueue(Reply(""), Reply(""))

    result = lathe_run(fake_openai, ws, tmp_path, TASK)

    assert result.returncode == 3, result.stderr
    assert "status: provider_error" in result.stderr
    assert "empty reply" in result.stderr
    assert result.stdout == ""


def test_two_empty_replies_carry_a_structured_error_in_json(tmp_path, fake_openai):
    ws = _workspace(tmp_path)
    fake_openai.enqueue(Reply(""), Reply(""))

    result = lathe_run(fake_openai, ws, tmp_path, "--json", TASK)

    finished = json.loads(result.stdout.splitlines()[-1])
    assert finished["status"] == "provider_error"
    assert finished["error"]["kind"] == "provider"
    assert "empty reply" in finished["error"]["message"]


def test_a_verify_command_that_cannot_run_stops_before_the_first_model_call(tmp_path, fake_openai):
    ws = _workspace(tmp_path)

    result = lathe_run(fake_openai, ws, tmp_path, "--verify", "pytestx -q", TASK)

    assert result.returncode == 2, result.stderr
    assert "pytestx -q" in result.stderr
    assert "127" in result.stderr and "--verify" in result.stderr
    assert fake_openai.chat_bodies() == []


def test_a_verify_command_that_cannot_run_on_a_continued_run_stops_at_its_first_check(
    tmp_path, fake_openai
):
    # No baseline runs on a conversation that goes on, so `--continue --verify typo` had
    # told the model "exit 127" after each reply until the run ended stuck.
    ws = _workspace(tmp_path)
    fake_openai.enqueue(Reply("Nothing to do."), *(Reply("Done.") for _ in range(3)))
    first = lathe_run(fake_openai, ws, tmp_path, TASK)
    assert first.returncode == 0, first.stderr

    result = lathe_run(fake_openai, ws, tmp_path, "--json", "--continue", "--verify", "pytestx -q")

    assert result.returncode == 1, result.stderr
    finished = json.loads(result.stdout.splitlines()[-1])  # the run ends, and says why
    assert finished["type"] == "run_finished" and finished["status"] == "failed"
    assert "pytestx -q` cannot run (exit 127" in finished["reason"]
    assert len(fake_openai.chat_bodies()) == 2


def test_a_check_whose_runner_module_is_missing_stops_before_the_first_model_call(
    tmp_path, fake_openai
):
    # `python -m pytest` where pytest is not installed: taken for a failing test, every
    # attempt ran and ended stuck.
    ws = _workspace(tmp_path)

    result = lathe_run(fake_openai, ws, tmp_path, "--verify", "python -m nosuchrunner_xyz -q",
                       TASK)  # fmt: skip

    assert result.returncode == 2, result.stderr
    [line] = [line for line in result.stderr.splitlines() if "cannot run" in line]
    assert line.startswith("lathe: ") and "nosuchrunner_xyz" in line and "install" in line
    assert fake_openai.chat_bodies() == []


def test_a_read_only_workspace_still_answers_read_only_questions(tmp_path, fake_openai):
    """Crashed with a traceback (`OSError: [Errno 30] ... '.lathe'`) and left an empty
    session. The workspace is made read-only for lathe by a bwrap mount around it."""
    import shutil

    if shutil.which("bwrap") is None:
        import pytest

        pytest.skip("bwrap makes the read-only mount")
    ws = _workspace(tmp_path)
    fake_openai.enqueue(
        Reply(calls=[Call("read", {"path": "app.py"}), Call("grep", {"pattern": "value"})]),
        Reply(calls=[Call("edit", {"path": "app.py", "old_string": "1", "new_string": "2"})]),
        Reply(calls=[Call("bash", {"command": "seq 1 20000"})]),  # long: its output spills
        Reply("app.py prints a value."),
    )
    read_only = ["bwrap", "--dev-bind", "/", "/", "--ro-bind", str(ws), str(ws), "--"]

    result = subprocess.run(
        [*read_only, *_argv(fake_openai, ws, "what does app.py do?")],
        cwd=tmp_path, env=_env(tmp_path), capture_output=True, text=True, timeout=120,
        stdin=subprocess.DEVNULL,
    )  # fmt: skip

    assert result.returncode == 0, result.stderr
    assert "Traceback" not in result.stderr
    assert result.stdout.strip() == "app.py prints a value."
    tools = [m for m in fake_openai.chat_bodies()[-1]["messages"] if m["role"] == "tool"]
    assert "value = 1" in tools[0]["content"]
    assert "Read-only file system" in tools[2]["content"]  # the edit, refused by the OS
    assert "19999" in tools[3]["content"] or "omitted" in tools[3]["content"]
    assert not (ws / ".lathe").exists()
    sessions = list((tmp_path / "home" / "sessions").glob("*/*.jsonl"))
    assert len(sessions) == 1 and len(sessions[0].read_text().splitlines()) > 3


def test_a_second_run_in_the_workspace_is_refused_or_waits(tmp_path, fake_openai):
    """Two runs at once both edited and interleaved their checkpoints."""
    ws = _workspace(tmp_path)
    with run_in_its_baseline_check(fake_openai, ws, tmp_path) as first:
        refused = lathe_run(fake_openai, ws, tmp_path, "another task")
        assert refused.returncode == 2
        assert f"pid {first.pid}" in refused.stderr and "--wait" in refused.stderr

        fake_openai.enqueue(Reply("Second run done."))
        waiting = subprocess.Popen(
            _argv(fake_openai, ws, "--wait", "another task"),
            cwd=tmp_path, env=_env(tmp_path), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
            stdin=subprocess.DEVNULL, text=True,
        )  # fmt: skip
        said = _stderr_until(waiting, "waiting for another lathe run")
        time.sleep(0.5)  # it has reached the wait: it must stay there while the first runs
        assert waiting.poll() is None, said
        assert fake_openai.chat_bodies() == []
    out, err = waiting.communicate(timeout=60)
    assert waiting.returncode == 0, said + err
    assert out.strip() == "Second run done."


def _stderr_until(process: subprocess.Popen, text: str, timeout: float = 60.0) -> str:
    """The process's stderr up to the first chunk holding `text`; fails if `text` has
    not come within `timeout` seconds or the process closed stderr (exited) first."""
    fd, seen = process.stderr.fileno(), b""
    deadline = time.monotonic() + timeout
    while text.encode() not in seen:
        ready, _, _ = select.select([fd], [], [], max(0.0, deadline - time.monotonic()))
        chunk = os.read(fd, 4096) if ready else b""
        if not chunk:
            raise AssertionError(f"{text!r} never came:\n{seen.decode(errors='replace')}")
        seen += chunk
    return seen.decode()


def test_undo_is_refused_while_a_run_holds_the_workspace(tmp_path, fake_openai):
    ws = _workspace(tmp_path)
    with run_in_its_baseline_check(fake_openai, ws, tmp_path):
        undo = subprocess.run(
            [sys.executable, "-m", "lathe", "undo", "-C", str(ws)], cwd=tmp_path,
            env=_env(tmp_path), capture_output=True, text=True, timeout=60,
        )  # fmt: skip
    assert undo.returncode == 2
    assert "lathe run" in undo.stderr and "working in" in undo.stderr


def test_a_run_refused_before_it_began_leaves_no_session_for_continue(tmp_path, fake_openai):
    ws = _workspace(tmp_path)
    fake_openai.enqueue(Reply("app.py prints value."), Reply("It printed 1."))
    assert lathe_run(fake_openai, ws, tmp_path, "what does app.py do?").returncode == 0

    for refused in (lathe_run(fake_openai, ws, tmp_path, "   "),
                    lathe_run(fake_openai, ws, tmp_path, "--deny", "bash(ls", "go")):  # fmt: skip
        assert refused.returncode == 2, refused.stderr
        assert refused.stderr.startswith("lathe: ")
    continued = lathe_run(fake_openai, ws, tmp_path, "--continue", "and then?")

    assert continued.returncode == 0, continued.stderr
    messages = fake_openai.chat_bodies()[-1]["messages"]
    sent = [m["content"] for m in messages if m["role"] != "system"]
    assert sent[:2] == ["what does app.py do?", "app.py prints value."]
    listed = subprocess.run(
        [sys.executable, "-m", "lathe", "sessions", "list", "-C", str(ws)],
        env=_env(tmp_path), capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert len(listed.stdout.splitlines()) == 1, listed.stdout  # piped: a line a session


def test_a_rule_naming_a_tool_lathe_lacks_is_refused_naming_the_one_meant(tmp_path, fake_openai):
    ws = _workspace(tmp_path)
    (ws / "tests").mkdir()
    (ws / "tests" / "test_app.py").write_text("x = 1\n")
    edit = Call("edit", {"path": "tests/test_app.py", "old_string": "x = 1", "new_string": "x = 2"})
    fake_openai.enqueue(Reply(calls=[edit]), Reply("done"))

    capitalised = lathe_run(fake_openai, ws, tmp_path, "--deny", "Edit(tests/**)", "go")
    misspelt = lathe_run(fake_openai, ws, tmp_path, "--deny", "reed(.env)", "go")

    assert (ws / "tests" / "test_app.py").read_text() == "x = 1\n"  # nothing ran
    assert fake_openai.chat_bodies() == []
    for refused, meant in ((capitalised, "edit(tests/**)"), (misspelt, "read(.env)")):
        assert refused.returncode == 2, refused.stderr
        [line] = refused.stderr.splitlines()
        assert line.startswith("lathe: ") and meant in line, line


@needs(check_bubblewrap(), "bubblewrap")
def test_ctrl_c_during_a_sandboxed_command_prints_no_traceback(tmp_path, fake_openai):
    ws = _workspace(tmp_path)
    started = ws / "command-started"  # in the workspace: the sandbox writes nowhere else
    command = "touch command-started; sleep 300 & sleep 301"
    fake_openai.enqueue(Reply(calls=[Call("bash", {"command": command})]), Reply("done"))
    process = subprocess.Popen(
        _argv(fake_openai, ws, "--approval", "auto", TASK),
        cwd=tmp_path, env=_env(tmp_path), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
        stdin=subprocess.DEVNULL, text=True,
    )  # fmt: skip
    while_running(process, started.exists, "the command never ran")

    process.send_signal(signal.SIGINT)
    _, errors = process.communicate(timeout=60)

    assert process.returncode == 130
    assert errors.splitlines() == [
        line for line in errors.splitlines() if line.startswith("lathe")
    ], errors  # every line lathe's own: no asyncio "exception was never retrieved"
    assert "interrupted" in errors.splitlines()[-1]


def test_a_reader_that_goes_away_changes_neither_the_exit_code_nor_the_session(
    tmp_path, fake_openai
):
    # `lathe run ... 2>&1 | head -1`: the progress lines and the answer share one pipe,
    # whose reader leaves after the first line, while the model is still answering.
    ws = _workspace(tmp_path)
    fake_openai.enqueue(Reply("app.py prints its value.", stall_after=1, stall_s=1.5))
    process = subprocess.Popen(
        _argv(fake_openai, ws, "what does app.py do?"), cwd=tmp_path, env=_env(tmp_path),
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
    )  # fmt: skip
    assert process.stdout is not None
    assert process.stdout.readline().startswith(b"lathe: ")
    process.stdout.close()

    assert process.wait(timeout=60) == 0  # unverified, as with the pipe read to the end
    [session] = (tmp_path / "home" / "sessions").rglob("*.jsonl")
    last = json.loads(session.read_text().splitlines()[-1])
    assert last["type"] == "run_end" and last["status"] == "unverified"


def test_resuming_a_session_of_another_workspace_is_refused_naming_its_own(tmp_path, fake_openai):
    first, other = _workspace(tmp_path), tmp_path / "other"
    other.mkdir()
    fake_openai.enqueue(Reply("app.py prints value."))
    run = subprocess.run(_argv(fake_openai, first, "--json", "what does app.py do?"),
                         cwd=tmp_path, env=_env(tmp_path), capture_output=True, text=True,
                         timeout=120, stdin=subprocess.DEVNULL)  # fmt: skip
    session_id = next(json.loads(line)["session_id"] for line in run.stdout.splitlines()
                      if '"run_started"' in line)  # fmt: skip

    elsewhere = lathe_run(fake_openai, other, tmp_path, "--resume", session_id, "and then?")

    assert elsewhere.returncode == 2
    [line] = elsewhere.stderr.splitlines()
    assert line.startswith("lathe: ") and str(first) in line and f"-C {first}" in line, line
    assert len(fake_openai.chat_bodies()) == 1  # nothing was sent for the refused run


def test_a_rule_for_a_tool_no_plugin_provides_warns_and_the_run_goes_on(tmp_path, fake_openai):
    ws = _workspace(tmp_path)
    fake_openai.enqueue(Reply("app.py prints value."))

    run = lathe_run(fake_openai, ws, tmp_path, "--deny", "deploy(prod)", "what does app.py do?")

    assert run.returncode == 0, run.stderr
    assert "'deploy(prod)' names no tool this run has, so it matches nothing" in run.stderr


def test_sigterm_ends_a_run_as_ctrl_c_does_and_records_it(tmp_path, fake_openai):
    # A CI job cancelled sends SIGTERM: the run died at once, its session "unfinished".
    ws = _workspace(tmp_path)
    fake_openai.enqueue(Hang(60))
    process = subprocess.Popen(
        _argv(fake_openai, ws, TASK), cwd=tmp_path, env=_env(tmp_path),
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL, text=True,
    )  # fmt: skip
    while_running(process, fake_openai.chat_bodies, "no model request")  # waiting on the model

    process.send_signal(signal.SIGTERM)
    _, errors = process.communicate(timeout=60)

    assert process.returncode == 143, errors
    assert errors.splitlines()[-1].startswith("lathe: terminated; resume with")
    [session] = (tmp_path / "home" / "sessions").rglob("*.jsonl")
    last = json.loads(session.read_text().splitlines()[-1])
    assert last["type"] == "run_end" and last["status"] == "interrupted"


def test_a_run_terminated_mid_tool_records_its_turns_usage_cause_and_the_tool_result(
    tmp_path, fake_openai
):
    # It recorded "interrupted after 0 turns, 0 tokens: interrupted by the user", and the
    # cut tool call got its result only at the next resume, after the run's end.
    ws = _workspace(tmp_path)
    started = ws / "command-started"
    command = "touch command-started; sleep 60"
    fake_openai.enqueue(Reply(calls=[Call("bash", {"command": command})]), Reply("done"))
    process = subprocess.Popen(
        _argv(fake_openai, ws, "--approval", "full", TASK), cwd=tmp_path, env=_env(tmp_path),
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL, text=True,
    )  # fmt: skip
    while_running(process, started.exists, "the command never ran")

    process.send_signal(signal.SIGTERM)
    process.communicate(timeout=60)

    assert process.returncode == 143
    [session] = (tmp_path / "home" / "sessions").rglob("*.jsonl")
    *earlier, end = [json.loads(line) for line in session.read_text().splitlines()]
    messages = [e["message"] for e in earlier if e["type"] == "message"]
    assert messages[-1]["role"] == "tool" and "interrupted" in messages[-1]["content"]
    assert end["type"] == "run_end" and end["status"] == "interrupted"
    assert end["turns"] == 1 and end["usage"]["input_tokens"] == 12
    assert "SIGTERM" in end["reason"]


def test_a_command_rule_with_a_star_that_would_match_nothing_is_refused(tmp_path, fake_openai):
    # `--deny 'bash(rm *)'` compared the word `*` literally: `rm -rf app.py` ran.
    ws = _workspace(tmp_path)
    fake_openai.enqueue(Reply(calls=[Call("bash", {"command": "rm -rf app.py"})]), Reply("ok"))

    refused = lathe_run(fake_openai, ws, tmp_path, "--deny", "bash(rm *)", "go")

    assert refused.returncode == 2, refused.stderr
    [line] = refused.stderr.splitlines()
    assert line.startswith("lathe: ") and "'bash(rm:*)'" in line, line
    assert (ws / "app.py").exists() and fake_openai.chat_bodies() == []


def test_hooks_that_fail_are_reported_and_a_hook_naming_Bash_is_refused(tmp_path, fake_openai):
    ws = _workspace(tmp_path)
    (ws / ".lathe").mkdir()
    hooks = ('[[hooks.pre_tool]]\ncommand = "~/bin/guard-typo.sh"\n'
             '[[hooks.post_tool]]\ncommand = "sleep 5"\ntimeout_s = 0.5\n')  # fmt: skip
    (ws / ".lathe" / "config.toml").write_text(hooks)
    fake_openai.enqueue(Reply(calls=[Call("bash", {"command": "echo hello"})]), Reply("done"))

    ran = lathe_run(fake_openai, ws, tmp_path, "--trust-project", "--approval", "full", "go")

    assert ran.returncode == 0, ran.stderr
    assert "the pre_tool hook `~/bin/guard-typo.sh` exited 127" in ran.stderr, ran.stderr
    assert "the bash call went on" in ran.stderr
    assert "the post_tool hook `sleep 5` ran past its 0.5 s" in ran.stderr

    (ws / ".lathe" / "config.toml").write_text(
        '[[hooks.pre_tool]]\ncommand = "exit 2"\ntools = ["Bash"]\n'
    )
    refused = lathe_run(fake_openai, ws, tmp_path, "--trust-project", "go")
    assert refused.returncode == 2
    [line] = refused.stderr.splitlines()
    assert "names the tool 'Bash'" in line and "did you mean 'bash'?" in line, line


def test_the_time_budget_holds_over_the_start_and_stop_hooks(tmp_path, fake_openai):
    # Each `sleep 8` hook ran outside the deadline: a 2 s run took 16 s.
    ws = _workspace(tmp_path)
    (ws / ".lathe").mkdir()
    (ws / ".lathe" / "config.toml").write_text(
        '[[hooks.session_start]]\ncommand = "sleep 8"\n[[hooks.stop]]\ncommand = "sleep 8"\n'
    )
    fake_openai.enqueue(Reply("done"))
    started = time.monotonic()

    ran = lathe_run(fake_openai, ws, tmp_path, "--trust-project", "--timeout", "2s", "go")

    assert time.monotonic() - started < 7, ran.stderr
    assert ran.returncode == 1, ran.stderr
    assert "status: out_of_budget" in ran.stderr


def test_credentials_in_the_base_url_are_masked_everywhere(tmp_path, fake_openai):
    # Not even a password's last characters: "bob…qx7Q" showed half of a short one.
    password, token = "pw-ZZTOPSECRETqx7Q", "tok-4242424242abcdef"
    ws = tmp_path / "ws"
    ws.mkdir()
    fake_openai.enqueue(server_error(500), Reply("ok"))
    url = fake_openai.base_url.replace("http://", f"http://bob:{password}@") + f"?api-key={token}"
    done = subprocess.run(
        [sys.executable, "-m", "lathe", "run", "--json", "--model", "m", "--base-url", url,
         "-C", str(ws), "Say ok"],
        env=_env(tmp_path), capture_output=True, text=True, timeout=120, stdin=subprocess.DEVNULL,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert '"type":"retry"' in done.stdout  # the error was reported
    shown = subprocess.run(
        [sys.executable, "-m", "lathe", "config", "show", "--model", "m", "--base-url", url],
        cwd=ws, env=_env(tmp_path), capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert "qx7Q" not in done.stdout + done.stderr + shown.stdout + shown.stderr
    for secret in (password, token):
        assert secret not in done.stdout + done.stderr + shown.stdout + shown.stderr
        files = subprocess.run(["grep", "-rl", secret, str(tmp_path / "home")],
                               capture_output=True, text=True)  # fmt: skip
        assert files.stdout == ""


def test_short_credentials_in_the_base_url_are_masked_in_provider_errors(tmp_path, fake_openai):
    # Too short for the redactor to mask them wherever they show up, they were printed
    # whole in the 401 message, the session, the log and `doctor --live`.
    ws = tmp_path / "ws"
    ws.mkdir()
    url = fake_openai.base_url.replace("http://", "http://u:pw-SHRT@") + "?api_key=SECRETQ"
    fake_openai.enqueue(unauthorized(), unauthorized())
    ran = subprocess.run(
        [sys.executable, "-m", "lathe", "run", "--model", "m", "--base-url", url, "-C",
         str(ws), "Say ok"],
        env=_env(tmp_path), capture_output=True, text=True, timeout=120, stdin=subprocess.DEVNULL,
    )  # fmt: skip
    checked = subprocess.run(
        [sys.executable, "-m", "lathe", "doctor", "--model", "m", "--base-url", url, "--live"],
        cwd=ws, env=_env(tmp_path), capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert ran.returncode == 3 and "rejected" in ran.stderr, ran.stderr
    assert "rejected" in checked.stdout + checked.stderr
    for secret in ("SECRETQ", "pw-SHRT"):
        assert secret not in ran.stdout + ran.stderr + checked.stdout + checked.stderr
        files = subprocess.run(["grep", "-rl", secret, str(tmp_path / "home")],
                               capture_output=True, text=True)  # fmt: skip
        assert files.stdout == ""


def test_a_post_tool_hooks_replacement_is_held_to_the_output_cap(tmp_path, fake_openai):
    ws = _workspace(tmp_path)
    (ws / ".lathe").mkdir()
    big = 'python3 -c \'import json; print(json.dumps({"content": "Z" * 900000}))\''
    (ws / ".lathe" / "config.toml").write_text(
        f"[[hooks.post_tool]]\ncommand = {json.dumps(big)}\n"
    )
    fake_openai.enqueue(Reply(calls=[Call("bash", {"command": "echo hi"})]), Reply("done"))

    ran = lathe_run(fake_openai, ws, tmp_path, "--trust-project", "--approval", "full", "go")

    assert ran.returncode == 0, ran.stderr
    (result,) = [m for m in fake_openai.chat_bodies()[-1]["messages"] if m["role"] == "tool"]
    assert len(result["content"].encode()) < 32_000
    assert "ZZZZ" in result["content"]


@needs(check_bubblewrap(), "bubblewrap")
def test_read_only_mode_keeps_the_workspace_read_only_for_commands_a_rule_allows(
    tmp_path, fake_openai
):
    # An allow rule ran the command unsandboxed: read-only mode wrote .git/config and a
    # test file that ask mode's sandbox would have kept.
    ws = tmp_path / "ws"
    (ws / "tests").mkdir(parents=True)
    (ws / "app.py").write_text("x = 1\n")
    fake_openai.enqueue(
        Reply(calls=[Call("bash", {"command": "printf 'x = 2\\n' > app.py"})]),
        Reply(calls=[Call("bash", {"command": "printf y > tests/t.py"})]),
        Reply("Done."),
    )
    done = lathe_run(
        fake_openai, ws, tmp_path, "--approval", "read-only", "--allow", "bash(printf:*)",
        "Look at it",
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert (ws / "app.py").read_text() == "x = 1\n"
    assert not (ws / "tests" / "t.py").exists()
    results = [m["content"] for m in fake_openai.chat_bodies()[-1]["messages"]
               if m["role"] == "tool"]  # fmt: skip
    assert all("Read-only file system" in result for result in results), results


def test_the_full_mode_warning_is_not_spent_by_a_run_that_never_started(tmp_path, fake_openai):
    ws = tmp_path / "ws"
    ws.mkdir()
    refused = lathe_run(fake_openai, ws, tmp_path, "--approval", "full", "--deny",
                        "bash(rm *)", "Look")  # fmt: skip
    assert refused.returncode == 2, refused.stderr
    fake_openai.enqueue(Reply("Nothing to do."))
    done = lathe_run(fake_openai, ws, tmp_path, "--approval", "full", "Look")
    assert done.returncode == 0, done.stderr
    assert "--approval full: commands run on this machine with no sandbox" in done.stderr


def test_a_reply_cut_by_the_output_limit_again_and_again_ends_stuck(tmp_path, fake_openai):
    # The same `write` cut off every turn ran to --max-turns (50 full-size replies).
    ws = tmp_path / "ws"
    ws.mkdir()
    cut = Reply(calls=[Call("write", {"path": "big.py", "content": "x = 1\n" * 50})],
                finish_reason="length")  # fmt: skip
    fake_openai.responder = lambda body: cut
    done = lathe_run(fake_openai, ws, tmp_path, "--approval", "full", "Write big.py")
    assert done.returncode == 1, done.stderr
    assert "status: stuck" in done.stderr and "output limit" in done.stderr
    assert len(fake_openai.chat_bodies()) <= 4


def test_an_endless_output_does_not_fill_the_disk_with_its_spill_file(tmp_path, fake_openai):
    # `yes` under a 2 s timeout wrote 1.4 GB into the workspace's .lathe/tmp.
    ws = tmp_path / "ws"
    ws.mkdir()
    fake_openai.enqueue(
        Reply(calls=[Call("bash", {"command": "yes 'a long line of output' | head -c 300000000",
                                   "timeout": 60})]),
        Reply("Done."),
    )  # fmt: skip
    done = lathe_run(fake_openai, ws, tmp_path, "--approval", "full", "Print a lot")
    assert done.returncode == 0, done.stderr
    [spill] = (ws / ".lathe" / "tmp").glob("*.log")  # not a second, cut copy of the result
    assert 0 < spill.stat().st_size <= 64 * 1024 * 1024 + 4096
    [result] = [m["content"] for m in fake_openai.chat_bodies()[-1]["messages"]
                if m["role"] == "tool"]  # fmt: skip
    assert "the spill file stops at 64 MiB" in result and str(spill) in result


def test_a_commands_output_reaches_the_model_as_a_terminal_would_show_it(tmp_path, fake_openai):
    # ANSI colours, a `\r` progress bar's every frame and raw NUL bytes (6 bytes each on
    # the wire) went to the model as they came.
    ws = tmp_path / "ws"
    ws.mkdir()
    script = (
        "printf '\\033[31mred\\033[0m \\033[1;32mgreen\\033[0m\\n'; "
        "for i in $(seq 0 10 100); do printf '\\rprogress %s%%' $i; done; printf '\\n'; "
        "head -c 3000 /dev/zero; printf 'after zeros\\n'"
    )
    fake_openai.enqueue(Reply(calls=[Call("bash", {"command": script})]), Reply("Done."))
    done = lathe_run(fake_openai, ws, tmp_path, "--approval", "full", "Show it")
    assert done.returncode == 0, done.stderr
    [result] = [m["content"] for m in fake_openai.chat_bodies()[-1]["messages"]
                if m["role"] == "tool"]  # fmt: skip
    assert "red green\n" in result and "\x1b" not in result
    assert "progress 100%" in result and "progress 50%" not in result
    assert "\x00" not in result and "after zeros" in result
    assert len(result) < 400


def test_the_file_list_in_the_prompt_is_bounded_in_bytes_and_lists_the_projects_own_first(
    tmp_path, fake_openai
):
    # 150 paths of 3.9 KB each made a 582 KB system prompt; in a project without git, a
    # .venv's files filled the list and app/core.py was not in it.
    ws = tmp_path / "ws"
    deep = ws / "src" / ("very_long_package_name_" * 6)
    deep.mkdir(parents=True)
    for n in range(200):
        (deep / f"Module{n:03d}WithAVeryLongDescriptiveName.java").write_text("class A {}\n")
    venv = ws / ".venv" / "lib" / "site-packages" / "pkg"
    venv.mkdir(parents=True)
    for n in range(300):
        (venv / f"m{n:03d}.py").write_text("x = 1\n")
    (ws / "app").mkdir()
    (ws / "app" / "core.py").write_text("def main():\n    pass\n")
    fake_openai.enqueue(Reply("Looked."))
    done = lathe_run(fake_openai, ws, tmp_path, "Look")
    assert done.returncode == 0, done.stderr
    system = fake_openai.chat_bodies()[0]["messages"][0]["content"]
    listing = system[system.index("Files in the workspace") :]
    listing = listing[: listing.index("\n\n")] if "\n\n" in listing else listing
    assert len(listing.encode()) <= 4_500
    assert "app/core.py" in listing
    assert "more (use glob or ls)" in listing


def test_a_failing_checks_huge_last_line_stays_within_the_profiles_output_limit(
    tmp_path, fake_openai
):
    # The small profile keeps a check's output to 800 bytes, but its last lines were kept
    # whole: a 10 MB last line made a 10 MB first request.
    ws = tmp_path / "ws"
    ws.mkdir()
    fake_openai.enqueue(Reply("Looked."), Reply("Looked."), Reply("Looked."), Reply("Looked."))
    check = "python3 -c \"print('E' * 2_000_000)\"; false"
    done = lathe_run(fake_openai, ws, tmp_path, "--profile", "small", "--verify", check,
                     "--max-turns", "1", "Fix it")  # fmt: skip
    assert done.returncode == 1, done.stderr
    first = fake_openai.chat_bodies()[0]
    assert len(json.dumps(first)) < 40_000


def test_many_reads_in_one_reply_share_the_room_one_result_may_take(tmp_path, fake_openai):
    # Six reads of 26 KB files in one reply made a 176 KB request for a 32K window, and
    # the run ended: the latest reply's results are never pruned.
    ws = tmp_path / "ws"
    ws.mkdir()
    for n in range(6):
        (ws / f"part{n}.py").write_text("".join(f"value_{n}_{i} = {i}  # padding\n"
                                                 for i in range(900)))  # fmt: skip
    reads = [Call("read", {"path": f"part{n}.py"}, id=f"r{n}") for n in range(6)]
    fake_openai.enqueue(Reply(calls=reads), Reply("Read them."))
    done = lathe_run(fake_openai, ws, tmp_path, "--approval", "full", "Read the parts")
    assert done.returncode == 0, done.stderr
    second = fake_openai.chat_bodies()[1]
    assert len(json.dumps(second)) < 32_000 * 3 // 2 + 20_000  # the results' share, and the rest
    results = [m["content"] for m in second["messages"] if m["role"] == "tool"]
    assert len(results) == 6 and all("More lines follow" in r for r in results)


@pytest.mark.parametrize("form", ["tagged", "fenced"])
def test_a_tool_call_written_as_text_is_run(tmp_path, fake_openai, form):
    # Qwen/Hermes models behind a server without a tool-call parser write their calls as
    # text: the run ended at once, "unverified" with exit 0, the JSON as its answer.
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "app.py").write_text("value = 1\n")
    call = json.dumps({"name": "edit", "arguments": {"path": "app.py", "old_string": "value = 1",
                                                     "new_string": "value = 2"}})  # fmt: skip
    text = f"<tool_call>\n{call}\n</tool_call>" if form == "tagged" else f"```json\n{call}\n```"
    fake_openai.enqueue(Reply(text), Reply("Set it to 2."))
    done = lathe_run(fake_openai, ws, tmp_path, "--approval", "full", "Set value to 2")
    assert done.returncode == 0, done.stderr
    assert (ws / "app.py").read_text() == "value = 2\n"
    assert len(fake_openai.chat_bodies()) == 2


def test_call_ids_a_server_reuses_across_turns_are_made_unique(tmp_path, fake_openai):
    # A server giving `call_0` every turn: the pruned outputs named the wrong call to redo.
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "notes.txt").write_text("notes\n")
    fake_openai.enqueue(
        Reply(calls=[Call("bash", {"command": "echo one"}, id="call_0")]),
        Reply(calls=[Call("read", {"path": "notes.txt"}, id="call_0")]),
        Reply("Done."),
    )
    done = lathe_run(fake_openai, ws, tmp_path, "--approval", "full", "Look")
    assert done.returncode == 0, done.stderr
    messages = fake_openai.chat_bodies()[-1]["messages"]
    calls = [c["id"] for m in messages if m["role"] == "assistant" for c in m.get("tool_calls", [])]
    answers = [m["tool_call_id"] for m in messages if m["role"] == "tool"]
    assert len(set(calls)) == 2 and answers == calls


def test_ctrl_c_keeps_the_result_of_a_call_that_finished_before_it(tmp_path, fake_openai):
    # The write had run and shown ✓, yet the record (and the model, on --continue) said
    # it was interrupted before it finished: the model was told a change did not happen.
    ws = _workspace(tmp_path)
    started = ws / "command-started"
    calls = [Call("write", {"path": "new.txt", "content": "made\n"}, id="call_w"),
             Call("bash", {"command": "touch command-started; sleep 60"}, id="call_b")]  # fmt: skip
    fake_openai.enqueue(Reply(calls=calls), Reply("going on"))
    process = subprocess.Popen(
        _argv(fake_openai, ws, "--approval", "full", TASK),
        cwd=tmp_path, env=_env(tmp_path), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
        stdin=subprocess.DEVNULL, text=True,
    )  # fmt: skip
    while_running(process, started.exists, "the command never ran")
    process.send_signal(signal.SIGINT)
    process.communicate(timeout=60)
    assert (ws / "new.txt").read_text() == "made\n"

    went_on = lathe_run(fake_openai, ws, tmp_path, "--continue", "go on")

    assert went_on.returncode == 0, went_on.stderr
    told = {
        m["tool_call_id"]: m["content"]
        for m in fake_openai.chat_bodies()[-1]["messages"]
        if m["role"] == "tool"
    }
    assert "interrupted" not in told["call_w"] and "new.txt" in told["call_w"], told
    assert "interrupted" in told["call_b"], told
