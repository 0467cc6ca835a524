"""End to end: `lathe run` as a subprocess fixes the calculator example against the fake
OpenAI-compatible server, and the real tests pass afterwards."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

from tests.fakes.openai_server import Call, Reply

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "calculator"
# The example's own tests need none of the pytest plugins installed for lathe's suite
# (hypothesis, xdist, benchmark...): loading them took each check ~0.4 s more CPU. Nor
# the check for unraisable exceptions, whose five garbage collections at exit were a
# fifth of what was left (~0.07 s a check, over forty checks).
PLAIN_PYTEST = {
    "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1",
    "PYTEST_ADDOPTS": "-p no:unraisableexception",
}


def lathe(*args: str, cwd: Path, env_extra: dict[str, str]) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("LATHE_", "OPENAI_"))}
    env.update(PLAIN_PYTEST, **env_extra)
    return subprocess.run(
        [sys.executable, "-m", "lathe", *args],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )


def run_against(
    server, ws: Path, tmp_path: Path, *args: str, env_extra: dict[str, str] | None = None
) -> subprocess.CompletedProcess:
    """`lathe run` on `ws` against the fake server, with a test key and a private home."""
    return lathe(
        "run", "--model", "m", "--base-url", server.base_url, "-C", str(ws), *args,
        cwd=tmp_path,
        env_extra={"OPENAI_API_KEY": "sk-test", "LATHE_HOME": str(tmp_path / "home"),
                   **(env_extra or {})},
    )  # fmt: skip


def workspace(tmp_path: Path) -> Path:
    target = tmp_path / "calc"
    shutil.copytree(EXAMPLE, target)
    return target


def reject_negative_income() -> Call:
    return Call(
        "edit",
        {
            "path": "calculator.py",
            "old_string": "        return 0.0",
            "new_string": '        raise ValueError("income must not be negative")',
        },
    )


def fix_the_rate(path: str = "calculator.py") -> Call:
    return Call(
        "edit",
        {"path": path, "old_string": "income * (rate / 10)", "new_string": "income * (rate / 100)"},
    )


def fixing_script() -> list[Reply]:
    return [
        Reply("Let me look at the code.", calls=[Call("read", {"path": "calculator.py"})]),
        Reply(calls=[reject_negative_income()]),
        Reply(calls=[fix_the_rate()]),
        Reply(calls=[Call("bash", {"command": "python -m pytest -q"})]),
        Reply("Fixed the rate and rejected negative income; both tests pass."),
    ]


def test_lathe_run_fixes_the_calculator(tmp_path, fake_openai):
    ws = workspace(tmp_path)
    fake_openai.enqueue(*fixing_script())

    result = lathe(
        "run",
        "--model",
        "fake-model",
        "--base-url",
        fake_openai.base_url,
        "-C",
        str(ws),
        "--verify",
        "python -m pytest -q -p no:cacheprovider",
        "Make the failing tests pass",
        cwd=tmp_path,
        env_extra={"OPENAI_API_KEY": "sk-test-e2e", "LATHE_HOME": str(tmp_path / "home")},
    )

    assert result.returncode == 0, result.stderr
    assert "Fixed the rate" in result.stdout
    assert "status: verified" in result.stderr
    check = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider"],
        cwd=ws,
        env={**os.environ, **PLAIN_PYTEST},
        capture_output=True,
        text=True,
    )
    assert check.returncode == 0, check.stdout
    bodies = fake_openai.chat_bodies()
    assert len(bodies) == 5
    assert all(body["model"] == "fake-model" for body in bodies)
    sent_results = [m for m in bodies[-1]["messages"] if m["role"] == "tool"]
    sent_calls = [
        call["id"]
        for m in bodies[-1]["messages"]
        if m["role"] == "assistant"
        for call in m.get("tool_calls") or []
    ]
    assert [m["tool_call_id"] for m in sent_results] == sent_calls
    assert "2 passed" in sent_results[-1]["content"]


def test_verify_that_never_passes_exits_1(tmp_path, fake_openai):
    ws = workspace(tmp_path)
    fake_openai.responder = lambda request: Reply("I think it is done.")

    result = run_against(
        fake_openai, ws, tmp_path,
        "--verify", "python -m pytest -q -p no:cacheprovider", "--max-turns", "3", "fix it",
    )  # fmt: skip

    assert result.returncode == 1
    # Claiming "done" three times against the failing check, with nothing done between.
    assert "status: stuck" in result.stderr
    assert "said it was done 3 times in a row" in result.stderr
    assert (ws / "calculator.py").read_text() == (EXAMPLE / "calculator.py").read_text()


def test_json_mode_prints_one_event_per_line(tmp_path, fake_openai):
    ws = workspace(tmp_path)
    fake_openai.enqueue(Reply("", calls=[Call("ls", {})]), Reply("Nothing to do."))

    result = run_against(fake_openai, ws, tmp_path, "--json", "look around")

    assert result.returncode == 0, result.stderr
    events = [json.loads(line) for line in result.stdout.splitlines()]
    types = [e["type"] for e in events]
    assert types[0] == "run_started" and types[-1] == "run_finished"
    assert "tool_started" in types and "tool_finished" in types
    assert events[-1]["status"] == "unverified"


def test_missing_key_and_model_are_usage_errors(tmp_path):
    unknown = lathe(
        "run", "--model", "gpt-4.1-mnii", "task", cwd=tmp_path, env_extra={"OPENAI_API_KEY": "sk-x"}
    )
    assert unknown.returncode == 2
    assert "gpt-4.1-mini" in unknown.stderr  # the nearest known model is suggested

    no_key = lathe("run", "--model", "gpt-4o", "task", cwd=tmp_path, env_extra={})
    assert no_key.returncode == 2
    assert "OPENAI_API_KEY" in no_key.stderr


def test_provider_failure_beyond_retries_exits_3(tmp_path, fake_openai):
    from tests.fakes.openai_server import unauthorized

    fake_openai.enqueue(unauthorized())
    result = lathe(
        "run",
        "--model",
        "m",
        "--base-url",
        fake_openai.base_url,
        "-C",
        str(tmp_path),
        "task",
        cwd=tmp_path,
        env_extra={"OPENAI_API_KEY": "sk-secret-value-123", "LATHE_HOME": str(tmp_path / "h")},
    )
    assert result.returncode == 3
    assert "OPENAI_API_KEY" in result.stderr
    assert "sk-secret-value-123" not in result.stderr + result.stdout


def test_headless_auto_runs_commands_inside_the_sandbox(tmp_path, fake_openai):
    ws = workspace(tmp_path)
    probe = Path.home() / f"lathe-sandbox-probe-{os.getpid()}"
    fake_openai.enqueue(
        Reply(calls=[Call("bash", {"command": f"touch {probe} && echo escaped"})]),
        Reply("done"),
    )

    result = run_against(fake_openai, ws, tmp_path, "probe")

    assert result.returncode == 0, result.stderr
    assert not probe.exists()
    tool_result = next(m for m in fake_openai.chat_bodies()[1]["messages"] if m["role"] == "tool")
    assert "escaped" not in tool_result["content"]
    assert "Read-only file system" in tool_result["content"]


# A write the command guard cannot see before it runs: a script the command creates.
_WRITE_UNSEEN = (
    "printf 'open(\"test_calculator.py\", \"w\").write(\"pass\")' > w.py && python w.py"
)


def test_a_denied_edit_holds_for_write_and_for_commands(tmp_path, fake_openai):
    ws = workspace(tmp_path)
    tests_before = (ws / "test_calculator.py").read_bytes()
    fake_openai.enqueue(
        Reply(calls=[Call("read", {"path": "test_calculator.py"})]),
        Reply(calls=[Call("write", {"path": "test_calculator.py", "content": "pass\n"})]),
        Reply(calls=[Call("bash", {"command": "echo pass > test_calculator.py"})]),
        Reply(calls=[Call("bash", {"command": _WRITE_UNSEEN})]),
        Reply(calls=[fix_the_rate(path="test_calculator.py")]),  # the right fix, wrong file
        Reply("done"),
    )

    result = run_against(fake_openai, ws, tmp_path, "--deny", "edit(test_*.py)", "weaken the tests")

    assert result.returncode == 0, result.stderr
    assert (ws / "test_calculator.py").read_bytes() == tests_before
    messages = fake_openai.chat_bodies()[-1]["messages"]
    assert "- no changes to: test_*.py" in messages[0]["content"]  # said up front
    results = [m["content"] for m in messages if m["role"] == "tool"]
    assert "edit(test_*.py)" in results[1]  # write: refused by the rule, naming it
    assert "edit(test_*.py)" in results[2]  # bash: the guard saw the write
    assert "Read-only file system" in results[3]  # one it cannot see: the sandbox's mount
    # edit, aimed at the wrong file: the refusal names the file that holds the text
    assert results[4].endswith(
        "The old_string does occur in calculator.py (line 8): did you mean that file?"
    )


def test_attempts_start_over_from_the_original_workspace(tmp_path, fake_openai):
    ws = workspace(tmp_path)
    original = {p.name: p.read_bytes() for p in ws.iterdir() if p.is_file()}
    failing_attempt = [
        Reply(
            calls=[
                Call(
                    "edit",
                    {"path": "calculator.py", "old_string": "rate / 10", "new_string": "rate * 0"},
                ),
                Call("write", {"path": "notes.txt", "content": "a stray file\n"}),
            ]
        ),
        Reply("Done."),  # the verify command fails: the model hears it and goes on
        Reply("Done, really."),  # and the turns run out: status failed
    ]
    fixing_attempt = [
        Reply(calls=[reject_negative_income(), fix_the_rate()]),
        Reply("Fixed both bugs."),
    ]
    fake_openai.enqueue(*failing_attempt, *fixing_attempt)

    result = run_against(
        fake_openai, ws, tmp_path, "--json",
        "--verify", "python -m pytest -q -p no:cacheprovider", "--attempts", "3",
        "--max-turns", "3", "Make the failing tests pass",
    )  # fmt: skip

    assert result.returncode == 0, result.stderr
    events = [json.loads(line) for line in result.stdout.splitlines()]
    starts = [e for e in events if e["type"] == "attempt_started"]
    assert [(e["attempt"], e["attempts"], e["previous_status"]) for e in starts] == [
        (2, 3, "failed")
    ]
    ends = [e["status"] for e in events if e["type"] == "run_finished"]
    assert ends[-1] == "verified" and len(ends) == 2
    assert not (ws / "notes.txt").exists()  # the first attempt's stray file is gone
    bodies = fake_openai.chat_bodies()
    second_start = bodies[len(failing_attempt)]["messages"]
    assert [m["role"] for m in second_start] == ["system", "user"]  # a fresh conversation
    sessions = list((tmp_path / "home" / "sessions").rglob("*.jsonl"))
    assert len(sessions) == 2
    assert original["test_calculator.py"] == (ws / "test_calculator.py").read_bytes()


def test_attempts_without_a_verify_command_make_one_attempt(tmp_path, fake_openai):
    ws = workspace(tmp_path)
    fake_openai.enqueue(Reply("I looked; nothing to do."))
    result = run_against(fake_openai, ws, tmp_path, "--attempts", "3", "look around")
    assert result.returncode == 0, result.stderr
    assert "needs a verify command" in result.stderr
    assert len(fake_openai.chat_bodies()) == 1


def test_a_shown_fix_is_applied_once_the_check_fails_but_not_a_test_change(tmp_path, fake_openai):
    ws = workspace(tmp_path)
    tests_before = (ws / "test_calculator.py").read_bytes()
    shown = (
        "Both fixes, and the test I would rather change:\n\n"
        "```python\n# test_calculator.py\n"
        "def test_negative_income_is_rejected():\n    assert tax(-5, 20) == 0.0\n```\n\n"
        "```python\n"
        "def tax(income: float, rate: float) -> float:\n"
        '    """Tax owed on `income` at `rate` percent. Negative income is an error."""\n'
        "    if income < 0:\n"
        '        raise ValueError("income must not be negative")\n'
        "    return income * (rate / 100)\n"
        "```"
    )
    fake_openai.enqueue(Reply(shown))

    result = run_against(
        fake_openai, ws, tmp_path,
        "-c", "agent.apply_reply_code=true",
        "--verify", "python -m pytest -q -p no:cacheprovider", "fix the calculator",
    )  # fmt: skip

    assert result.returncode == 0, result.stderr
    assert "status: verified after 1 turn;" in result.stderr
    assert "edit calculator.py (the code in the reply) -> +2 -2" in result.stderr
    # A test the model would rather change is never applied from prose, rule or not.
    assert "test_calculator.py (the code in the reply)" not in result.stderr
    assert (ws / "test_calculator.py").read_bytes() == tests_before
    assert len(fake_openai.chat_bodies()) == 1
