"""`lathe run --continue` carries only what is safe and able to run again: an approval
tighter than the face's default (`read-only`), never a looser one; a model named so the
config resolves it again (`ollama/llama3.1`, not the bare id); a check with its inline
credential masked in the file, and so asked for again.

Reproduced on main with the real CLI: an app session (`ask`) continued by `lathe run
--continue "write new.py"` refused every edit and exited 0; `--approval full` went on
unasked; `--model ollama/llama3.1` then `--continue` failed "unknown model 'llama3.1'";
`--verify "test -n postgresql://app:PASSWORD@db/x"` was written to the session's
`model_change` entry in clear and `--continue` printed it back."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from tests.fakes.openai_server import Call, FakeOpenAIServer, Reply

WRITE = Call("write", {"path": "made.txt", "content": "written\n"})


def _env(tmp_path: Path) -> dict[str, str]:
    gone = ("LATHE_", "OPENAI_", "HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "NO_PROXY")
    env = {k: v for k, v in os.environ.items() if not k.upper().startswith(gone)}
    env.update({"OPENAI_API_KEY": "sk-test", "LATHE_HOME": str(tmp_path / "home"),
                "LATHE_CONFIG": str(tmp_path / "config.toml"),
                "HTTPS_PROXY": "http://127.0.0.1:9", "NO_PROXY": "127.0.0.1"})  # fmt: skip
    return env


def _run(tmp_path: Path, *args: str) -> subprocess.CompletedProcess:
    ws = tmp_path / "ws"
    ws.mkdir(exist_ok=True)
    config = tmp_path / "config.toml"
    if not config.exists():
        config.write_text("")
    return subprocess.run(
        [sys.executable, "-m", "lathe", "run", "--json", "-C", str(ws), *args],
        cwd=tmp_path, env=_env(tmp_path), capture_output=True, text=True, timeout=120,
        stdin=subprocess.DEVNULL,
    )  # fmt: skip


def _session_id(result: subprocess.CompletedProcess) -> str:
    events = [json.loads(line) for line in result.stdout.splitlines()]
    return next(e["session_id"] for e in events if e["type"] == "run_started")


def _model_changes(tmp_path: Path) -> list[dict]:
    [path] = (tmp_path / "home" / "sessions").glob("*/*.jsonl")
    lines = [json.loads(line) for line in path.read_text().splitlines()]
    return [line for line in lines if line.get("type") == "model_change"]


def _said(result: subprocess.CompletedProcess) -> list[str]:
    return [line for line in result.stderr.splitlines() if "session" in line]


def test_a_full_approval_is_not_carried_over_and_the_line_says_so(tmp_path, fake_openai):
    fake_openai.enqueue(Reply("Looked."), Reply("More."))
    first = _run(tmp_path, "--model", "m", "--base-url", fake_openai.base_url,
                 "--approval", "full", "look")  # fmt: skip
    assert first.returncode == 0, first.stderr

    result = _run(tmp_path, "--continue", "more")

    assert result.returncode == 0, result.stderr
    assert _said(result) == [
        f"lathe: continuing session {_session_id(first)} with model m at "
        f"{fake_openai.base_url} (from the session); approval full was not carried over: "
        "give --approval full to go on with it"
    ]
    assert [c["settings"]["approval"] for c in _model_changes(tmp_path)] == ["full", "auto"]


def test_an_ask_session_continued_headless_runs_in_auto_not_refusing_every_edit(
    tmp_path, fake_openai
):
    from lathe.session import SessionStore
    from lathe.session.entries import ModelChangeEntry, run_settings
    from lathe.types import AssistantMessage, UserMessage

    # What the app records for a message sent in its default `ask`.
    (tmp_path / "ws").mkdir()
    settings = run_settings(fake_openai.base_url, "ask", None, None)
    with SessionStore(tmp_path / "home").create(tmp_path / "ws", "m") as app_session:
        app_session.append(ModelChangeEntry(provider="openai", model="m", settings=settings))
        app_session.append_message(UserMessage(content="look"))
        app_session.append_message(AssistantMessage(text="Looked."))
    fake_openai.enqueue(Reply(calls=[WRITE]), Reply("Written."))

    result = _run(tmp_path, "--continue", "write made.txt")

    assert result.returncode == 0, result.stderr
    assert (tmp_path / "ws" / "made.txt").read_text() == "written\n"
    assert _said(result) == [
        f"lathe: continuing session {app_session.id} with model m at {fake_openai.base_url} "
        "(from the session)"
    ]


def test_a_model_given_as_provider_and_id_is_continued_by_that_name(tmp_path, fake_openai):
    (tmp_path / "config.toml").write_text(
        f'[providers.ollama]\nbase_url = "{fake_openai.base_url}"\n'
    )
    fake_openai.enqueue(Reply("Looked."), Reply("More."))
    first = _run(tmp_path, "--model", "ollama/llama3.1", "look")
    assert first.returncode == 0, first.stderr

    result = _run(tmp_path, "--continue", "more")

    assert result.returncode == 0, result.stderr
    assert [body["model"] for body in fake_openai.chat_bodies()] == ["llama3.1", "llama3.1"]
    assert _said(result) == [
        f"lathe: continuing session {_session_id(first)} with model ollama/llama3.1 "
        "(from the session)"
    ]


def test_a_model_no_longer_configured_is_asked_for_in_one_line(tmp_path, fake_openai):
    provider = f'[providers.ollama]\nbase_url = "{fake_openai.base_url}"\n'
    (tmp_path / "config.toml").write_text(
        provider + '[models.mine]\nprovider = "ollama"\nid = "qwen"\n'
    )
    fake_openai.enqueue(Reply("Looked."), Reply("More."))
    first = _run(tmp_path, "--model", "mine", "look")
    assert first.returncode == 0, first.stderr
    (tmp_path / "config.toml").write_text(provider)

    refused = _run(tmp_path, "--continue", "more")

    assert refused.returncode == 2
    assert refused.stderr.splitlines() == [
        f"lathe: session {_session_id(first)} ran with model mine, which is not configured "
        "now; give --model"
    ]
    given = _run(tmp_path, "--continue", "--model", "ollama/qwen", "more")
    assert given.returncode == 0, given.stderr
    assert [body["model"] for body in fake_openai.chat_bodies()] == ["qwen", "qwen"]


def test_a_checks_inline_credential_is_not_written_and_the_check_is_asked_for(
    tmp_path, fake_openai
):
    password = "Zq9hunter2pass"
    check = f"test -n postgresql://app:{password}@db/x"
    fake_openai.enqueue(Reply("Done."), Reply("Done."))
    first = _run(tmp_path, "--model", "m", "--base-url", fake_openai.base_url,
                 "--verify", check, "go")  # fmt: skip
    assert first.returncode == 0, first.stderr
    [change] = _model_changes(tmp_path)
    assert password not in json.dumps(change)
    assert change["settings"]["verify"].startswith("test -n postgresql://app:")

    refused = _run(tmp_path, "--continue", "more")

    assert refused.returncode == 2
    [line] = refused.stderr.splitlines()
    assert line.startswith(f"lathe: session {_session_id(first)} cannot be continued as it ran")
    assert "holds a secret" in line and "--verify" in line and password not in line
    given = _run(tmp_path, "--continue", "--verify", check, "more")
    assert given.returncode == 0, given.stderr


def test_a_read_only_session_still_goes_on_read_only(tmp_path, fake_openai):
    with FakeOpenAIServer() as server:
        server.enqueue(Reply("Looked."), Reply(calls=[WRITE]), Reply("Could not."))
        first = _run(tmp_path, "--model", "m", "--base-url", server.base_url,
                     "--approval", "read-only", "look")  # fmt: skip
        assert first.returncode == 0, first.stderr

        result = _run(tmp_path, "--continue", "write it")

        assert result.returncode == 0, result.stderr
    assert not (tmp_path / "ws" / "made.txt").exists()
    assert "approval read-only (from the session)" in result.stderr
