"""`lathe run` with a pre_tool hook that rewrites a call's arguments: what ran is said to
the user, the session and the model, and the hook runs once. Hooks come from a user
config named by LATHE_CONFIG (the helpers here serve the other hook files too)."""

from __future__ import annotations

import json
from pathlib import Path

from tests.e2e.test_calculator import lathe, run_against
from tests.fakes.openai_server import Call, Reply

REWRITE = (
    """python3 -c 'import json,sys; a=json.load(sys.stdin)["arguments"]; """
    """a["command"]="echo REWRITTEN > rewritten.txt"; print(json.dumps({"arguments": a}))'"""
)


def run_with_hooks(tmp_path: Path, server, toml: str, *args: str):
    """`lathe run --approval full` on `tmp_path/ws` with `toml` as the user config."""
    ws = tmp_path / "ws"
    ws.mkdir(exist_ok=True)
    user = tmp_path / "user.toml"
    user.write_text(toml)
    result = run_against(
        server, ws, tmp_path, "--approval", "full", *args, "go",
        env_extra={"LATHE_CONFIG": str(user)},
    )  # fmt: skip
    return ws, result


def pre_tool_hook(command: str, tools: list[str], timeout_s: float | None = None) -> str:
    """A `[[hooks.pre_tool]]` table."""
    timeout = f"timeout_s = {timeout_s}\n" if timeout_s is not None else ""
    return f"[[hooks.pre_tool]]\ncommand = '''{command}'''\ntools = {tools!r}\n{timeout}"


def tool_results(server) -> list[dict]:
    """The tool results the model was sent last."""
    return [m for m in server.chat_bodies()[-1]["messages"] if m["role"] == "tool"]


def progress_lines(stderr: str, tool: str) -> list[str]:
    """The progress lines of `tool`'s calls."""
    return [line.strip() for line in stderr.splitlines() if line.startswith(f"  {tool} ")]


def test_a_rewritten_call_is_shown_and_told_as_it_ran(tmp_path, fake_openai) -> None:
    # The hook's command ran, but the progress line said `bash echo hi -> exit 0` and the
    # model read `[exit code: 0]` as the result of its own command.
    fake_openai.enqueue(Reply(calls=[Call("bash", {"command": "echo hi"})]), Reply("ok"))

    ws, result = run_with_hooks(tmp_path, fake_openai, pre_tool_hook(REWRITE, ["bash"]))

    assert result.returncode == 0, result.stderr[-2000:]
    assert (ws / "rewritten.txt").read_text() == "REWRITTEN\n"
    [line] = progress_lines(result.stderr, "bash")
    assert "echo REWRITTEN > rewritten.txt" in line, result.stderr
    [told] = tool_results(fake_openai)
    first = told["content"].splitlines()[0]
    assert "hook changed" in first and "echo REWRITTEN > rewritten.txt" in first, told


def test_a_rewritten_call_is_recorded_as_it_ran(tmp_path, fake_openai) -> None:
    fake_openai.enqueue(Reply(calls=[Call("bash", {"command": "echo hi"})]), Reply("ok"))

    _, result = run_with_hooks(tmp_path, fake_openai, pre_tool_hook(REWRITE, ["bash"]), "--json")

    assert result.returncode == 0, result.stderr[-2000:]
    events = [json.loads(line) for line in result.stdout.splitlines()]
    [finished] = [e for e in events if e["type"] == "tool_finished"]
    assert finished["details"]["rewritten_arguments"] == {
        "command": "echo REWRITTEN > rewritten.txt"
    }
    assert "echo REWRITTEN > rewritten.txt" in finished["summary"]
    session = next(e["session_id"] for e in events if e["type"] == "run_started")
    home = {"LATHE_HOME": str(tmp_path / "home")}
    shown = lathe("sessions", "show", session, cwd=tmp_path, env_extra=home).stdout
    assert "→ bash(echo hi)" in shown  # the model's call, as it wrote it
    assert "echo REWRITTEN > rewritten.txt" in shown.split("← bash", 1)[1], shown


def test_each_hook_runs_once_for_a_rewritten_call(tmp_path, fake_openai) -> None:
    # The chain restarts on a rewrite so the gate judges it; the hook that made the
    # rewrite ran twice more on its own result (three runs, one per nested chain).
    log = tmp_path / "runs.log"
    fake_openai.enqueue(Reply(calls=[Call("bash", {"command": "echo hi"})]), Reply("ok"))

    _, result = run_with_hooks(
        tmp_path, fake_openai, pre_tool_hook(f"echo run >> {log}; {REWRITE}", ["bash"])
    )

    assert result.returncode == 0, result.stderr[-2000:]
    assert log.read_text() == "run\n"


def test_a_rewrite_is_judged_by_the_gate_through_the_nested_chains(tmp_path, fake_openai) -> None:
    # A hook is asked once per set of arguments: the gate must still see the rewrite.
    rewrite = json.dumps({"arguments": {"command": "rm -rf /"}})
    fake_openai.enqueue(Reply(calls=[Call("bash", {"command": "echo hi"})]), Reply("ok"))

    _, result = run_with_hooks(tmp_path, fake_openai, pre_tool_hook(f"echo '{rewrite}'", ["bash"]))

    assert result.returncode == 0, result.stderr[-2000:]
    [told] = tool_results(fake_openai)
    assert told["content"].startswith("Denied") or "denied" in told["content"].lower(), told
    [line] = progress_lines(result.stderr, "bash")
    assert "!!" in line, line


def _finished_summary(stdout: str) -> str:
    [finished] = [e for e in map(json.loads, stdout.splitlines()) if e["type"] == "tool_finished"]
    return finished["summary"]


def test_a_long_rewritten_call_still_says_a_hook_rewrote_it(tmp_path, fake_openai) -> None:
    # The 120-character cut took the end of the summary: `(a hook rewrote it to: gen/…`
    # with no closing parenthesis, or nothing of it at all.
    far = "/".join(["deeply_nested_folder"] * 4) + "/a_file_with_a_long_name.py"
    redirect = f"""echo '{{"arguments": {{"path": "{far}", "content": "x"}}}}'"""
    fake_openai.enqueue(Reply(calls=[Call("write", {"path": "a.py", "content": "x"})]), Reply("ok"))

    ws, result = run_with_hooks(tmp_path, fake_openai, pre_tool_hook(redirect, ["write"]), "--json")

    assert result.returncode == 0, result.stderr[-2000:]
    assert (ws / far).is_file()
    summary = _finished_summary(result.stdout)
    assert len(summary) <= 120 and summary.startswith("created"), summary
    assert "(a hook rewrote it to: deeply_nested_folder/" in summary, summary
    assert summary.endswith("…)"), summary


def test_a_long_outcome_keeps_the_word_that_a_hook_rewrote_the_call(tmp_path, fake_openai) -> None:
    # The key argument (the path) unchanged: the summary ends `(a hook rewrote its
    # arguments)`, after an error naming the long path.
    far = "/".join(["deeply_nested_folder"] * 5)
    (tmp_path / "ws" / far).mkdir(parents=True)
    new_content = (
        """python3 -c 'import json,sys; a=json.load(sys.stdin)["arguments"]; """
        """a["content"]="y"; print(json.dumps({"arguments": a}))'"""
    )
    fake_openai.enqueue(Reply(calls=[Call("write", {"path": far, "content": "x"})]), Reply("ok"))

    _, result = run_with_hooks(
        tmp_path, fake_openai, pre_tool_hook(new_content, ["write"]), "--json"
    )

    assert result.returncode == 0, result.stderr[-2000:]
    summary = _finished_summary(result.stdout)
    assert len(summary) <= 120 and summary.startswith(far[:40]), summary
    assert summary.endswith("… (a hook rewrote its arguments)"), summary
