"""`lathe run --continue` / `--resume ID` goes on with what the session's last run was
started with (its `model_change` entry's settings: `entries.recorded_run`), each one the
user does not give again by a flag, a variable or a config file, and says so on stderr.

Reproduced on main with the real CLI: with LATHE_BASE_URL and LATHE_MODEL unset,
`lathe run --model m --base-url LOCAL --approval read-only "review"` then
`lathe run --continue "more"` sent the whole conversation to https://api.openai.com/v1
in approval `auto`, without a word. Here an HTTPS proxy that is not there stands
between a regression and the real API."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from tests.fakes.openai_server import Call, FakeOpenAIServer, Reply

PASSWORD = "hunter2-horse-battery"


def _env(tmp_path: Path) -> dict[str, str]:
    gone = ("LATHE_", "OPENAI_", "HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "NO_PROXY")
    env = {k: v for k, v in os.environ.items() if not k.upper().startswith(gone)}
    env.update({"OPENAI_API_KEY": "sk-test", "LATHE_HOME": str(tmp_path / "home"),
                "MY_DB_PASSWORD": PASSWORD, "HTTPS_PROXY": "http://127.0.0.1:9",
                "NO_PROXY": "127.0.0.1"})  # fmt: skip
    return env


def _run(tmp_path: Path, *args: str, **env: str) -> subprocess.CompletedProcess:
    ws = tmp_path / "ws"
    ws.mkdir(exist_ok=True)
    return subprocess.run(
        [sys.executable, "-m", "lathe", "run", "--json", "-C", str(ws), *args],
        cwd=tmp_path, env={**_env(tmp_path), **env}, capture_output=True, text=True,
        timeout=120, stdin=subprocess.DEVNULL,
    )  # fmt: skip


def _session_id(result: subprocess.CompletedProcess) -> str:
    events = [json.loads(line) for line in result.stdout.splitlines()]
    return next(e["session_id"] for e in events if e["type"] == "run_started")


def _tool_results(server: FakeOpenAIServer) -> list[str]:
    return [m["content"] for m in server.chat_bodies()[-1]["messages"] if m["role"] == "tool"]


WRITE = Call("write", {"path": "made.txt", "content": "written\n"})


@pytest.mark.parametrize("how", ["--continue", "--resume"])
def test_a_continued_run_keeps_the_sessions_endpoint_model_and_approval(tmp_path, fake_openai, how):
    fake_openai.enqueue(Reply("Reviewed."), Reply(calls=[WRITE]), Reply("Could not write."))
    first = _run(tmp_path, "--model", "m", "--base-url", fake_openai.base_url,
                 "--approval", "read-only", "review")  # fmt: skip
    assert first.returncode == 0, first.stderr
    session = _session_id(first)
    again = ["--continue"] if how == "--continue" else ["--resume", session]

    result = _run(tmp_path, *again, "more")

    assert result.returncode == 0, result.stderr
    assert len(fake_openai.chat_bodies()) == 3  # the continued run's requests came here
    body = fake_openai.chat_bodies()[1]
    assert body["model"] == "m"
    assert [m["content"] for m in body["messages"] if m["role"] == "user"][-2:] == [
        "review",
        "more",
    ]
    assert not (tmp_path / "ws" / "made.txt").exists()  # still read-only
    assert "read-only" in _tool_results(fake_openai)[0]
    said = [line for line in result.stderr.splitlines() if "(from the session)" in line]
    assert said == [
        f"lathe: continuing session {session} with model m at {fake_openai.base_url}, "
        "approval read-only (from the session)"
    ]


def test_an_approval_and_endpoint_given_again_win_over_the_sessions(tmp_path, fake_openai):
    fake_openai.enqueue(Reply("Reviewed."))
    first = _run(tmp_path, "--model", "m", "--base-url", fake_openai.base_url,
                 "--approval", "read-only", "review")  # fmt: skip
    assert first.returncode == 0, first.stderr

    with FakeOpenAIServer() as other:
        other.enqueue(Reply(calls=[WRITE]), Reply("Written."))
        result = _run(tmp_path, "--continue", "--base-url", other.base_url,
                      "--approval", "auto", "write it")  # fmt: skip

        assert result.returncode == 0, result.stderr
        assert len(other.chat_bodies()) == 2 and len(fake_openai.chat_bodies()) == 1
        assert other.chat_bodies()[0]["model"] == "m"  # not given again: the session's
    assert (tmp_path / "ws" / "made.txt").read_text() == "written\n"
    said = [line for line in result.stderr.splitlines() if "(from the session)" in line]
    assert said == [f"lathe: continuing session {_session_id(first)} with model m "
                    "(from the session)"]  # fmt: skip


def test_an_approval_a_variable_or_config_file_gives_wins_over_the_sessions(tmp_path, fake_openai):
    fake_openai.enqueue(Reply("Reviewed."), *(Reply(calls=[WRITE]), Reply("Written.")) * 2)
    first = _run(tmp_path, "--model", "m", "--base-url", fake_openai.base_url,
                 "--approval", "read-only", "review")  # fmt: skip
    assert first.returncode == 0, first.stderr
    config = tmp_path / "config.toml"
    config.write_text('[permissions]\napproval = "auto"\n')

    for env in ({"LATHE_APPROVAL": "auto"}, {"LATHE_CONFIG": str(config)}):
        (tmp_path / "ws" / "made.txt").unlink(missing_ok=True)
        result = _run(tmp_path, "--continue", "write it", **env)

        assert result.returncode == 0, result.stderr
        assert (tmp_path / "ws" / "made.txt").read_text() == "written\n"
        assert f"with model m at {fake_openai.base_url} (from the session)" in result.stderr


def test_a_session_whose_endpoint_held_credentials_is_not_continued_elsewhere(
    tmp_path, fake_openai
):
    # The endpoint is recorded masked: going on without it would send the conversation
    # to the default endpoint.
    password = "correct-horse-battery-staple-0123456789"
    with_password = fake_openai.base_url.replace("http://", f"http://bob:{password}@")
    fake_openai.enqueue(Reply("Reviewed."), Reply("Went on."))
    first = _run(tmp_path, "--model", "m", "--base-url", with_password, "review")
    assert first.returncode == 0, first.stderr

    refused = _run(tmp_path, "--continue", "more")

    assert refused.returncode == 2
    [line] = refused.stderr.splitlines()
    assert line.startswith(f"lathe: session {_session_id(first)} cannot be continued as it ran")
    assert "holds credentials" in line and "--base-url" in line and password not in line
    assert len(fake_openai.chat_bodies()) == 1

    given = _run(tmp_path, "--continue", "--base-url", with_password, "more")

    assert given.returncode == 0, given.stderr
    assert len(fake_openai.chat_bodies()) == 2


def test_a_check_recorded_masked_is_asked_for_again_not_run_masked(tmp_path, fake_openai):
    fake_openai.enqueue(*(Reply("Done.") for _ in range(4)))
    check = f"test -n {PASSWORD}"
    first = _run(tmp_path, "--model", "m", "--base-url", fake_openai.base_url, "--verify",
                 check, "T")  # fmt: skip
    assert first.returncode == 0, first.stderr

    refused = _run(tmp_path, "--continue", "more")

    assert refused.returncode == 2
    [line] = refused.stderr.splitlines()
    assert line.startswith(f"lathe: session {_session_id(first)} cannot be continued as it ran")
    assert "holds a secret" in line and "--verify" in line and PASSWORD not in line
    given = _run(tmp_path, "--continue", "--verify", check, "more")
    assert given.returncode == 0, given.stderr
    assert fake_openai.chat_bodies()[-1]["messages"][-1]["content"] == "more"


def test_a_session_that_does_not_say_its_settings_goes_on_with_the_runs_and_says_so(
    tmp_path, fake_openai
):
    from lathe.session import SessionStore
    from lathe.types import AssistantMessage, UserMessage

    (tmp_path / "ws").mkdir()
    with SessionStore(tmp_path / "home").create(tmp_path / "ws", "m") as older:
        older.append_message(UserMessage(content="review"))
        older.append_message(AssistantMessage(text="Reviewed."))
    fake_openai.enqueue(Reply("Went on."))

    result = _run(tmp_path, "--continue", "--model", "m", "--base-url", fake_openai.base_url,
                  "more")  # fmt: skip

    assert result.returncode == 0, result.stderr
    assert len(fake_openai.chat_bodies()) == 1
    assert (
        f"lathe: session {older.id} goes on with this run's settings: its file does not say "
        "which endpoint and approval mode it ran with"
    ) in result.stderr
