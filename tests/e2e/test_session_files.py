"""Session files that `--continue`, `--resume` and `lathe sessions` meet at the edges,
each reproduced with the real CLI:

- `--continue` after a crash picked the newest file of the workspace, which was a
  subagent's: the child's brief went on as a top-level run;
- a session path that is a folder, or a file lathe may not read, crashed every command
  with a traceback.
"""

from __future__ import annotations

import json
import os
import resource
import subprocess
import sys
import time
from pathlib import Path

import pytest
from tests.e2e.test_run_edges import _env, lathe_run
from tests.fakes.openai_server import Call, Reply


def _lathe(tmp_path: Path, *args: str, prefix: list[str]) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("LATHE_", "OPENAI_"))}
    env.update({"OPENAI_API_KEY": "sk-test", "LATHE_HOME": str(tmp_path / "home")})
    return subprocess.run(
        [*prefix, sys.executable, "-m", "lathe", *args], cwd=tmp_path, env=env, capture_output=True,
        text=True, timeout=60, stdin=subprocess.DEVNULL,
    )  # fmt: skip


def _one_session(tmp_path: Path, fake_openai) -> tuple[Path, Path]:
    ws = tmp_path / "ws"
    ws.mkdir()
    fake_openai.enqueue(Reply("Listed the files."))
    done = lathe_run(fake_openai, ws, tmp_path, "PARENT TASK: list the files")
    assert done.returncode == 0, done.stderr
    [session] = (tmp_path / "home" / "sessions").rglob("*.jsonl")
    return ws, session


def test_continue_skips_a_subagents_session_and_goes_on_with_the_users(tmp_path, fake_openai):
    ws, parent = _one_session(tmp_path, fake_openai)
    header = json.loads(parent.read_text().splitlines()[0])
    child_id = "c" * 12
    child_header = {**header, "id": child_id, "parent_session": header["id"],
                    "parent_call": "call_0"}  # fmt: skip
    brief = {"type": "message", "id": "e1", "parent": None, "ts": header["created"],
             "message": {"role": "user", "content": "CHILD BRIEF: look around"}}  # fmt: skip
    child = parent.with_name(f"20991231T000000Z_{child_id}.jsonl")
    child.write_text(json.dumps(child_header) + "\n" + json.dumps(brief) + "\n")
    later = time.time() + 10
    os.utime(child, (later, later))  # the newest file of the workspace

    fake_openai.enqueue(Reply("Went on."))
    resumed = lathe_run(fake_openai, ws, tmp_path, "--continue", "go on")

    assert resumed.returncode == 0, resumed.stderr
    sent = json.dumps(fake_openai.chat_bodies()[-1]["messages"])
    assert "PARENT TASK" in sent and "CHILD BRIEF" not in sent


@pytest.mark.parametrize("broken", ["folder", "unreadable"])
def test_a_session_that_cannot_be_read_is_one_lathe_line(tmp_path, fake_openai, broken):
    ws, session = _one_session(tmp_path, fake_openai)
    session_id = session.stem.split("_")[1]
    if broken == "folder":
        session.unlink()
        session.mkdir()
    else:
        session.chmod(0)
    # Root reads a file whatever its mode, unless it gives up the capabilities for that.
    as_user = ["setpriv", "--bounding-set", "-dac_override,-dac_read_search"]
    prefix = as_user if os.geteuid() == 0 and broken == "unreadable" else []

    run = ["run", "--model", "m", "--base-url", fake_openai.base_url, "-C", str(ws)]
    for args in (["sessions", "show", session_id[:8]], [*run, "--resume", session_id, "go"]):
        shown = _lathe(tmp_path, *args, prefix=prefix)
        assert shown.returncode in (1, 2), shown.stderr
        [line] = shown.stderr.splitlines()
        assert line.startswith("lathe: ") and str(session) in line, line


def test_sessions_list_names_a_file_it_could_not_read(tmp_path, fake_openai):
    ws, session = _one_session(tmp_path, fake_openai)
    session.write_text("")  # cut short while being created

    listed = _lathe(tmp_path, "sessions", "list", "-C", str(ws), prefix=[])

    assert listed.returncode == 0, listed.stderr
    assert listed.stdout == ""  # piped, nothing to list says so on stderr
    line, nothing = listed.stderr.splitlines()
    assert line.startswith("lathe: warning: ") and str(session) in line, line
    assert nothing.startswith("lathe: no sessions for"), nothing


def test_a_session_write_that_fails_ends_the_run_in_one_line_and_continue_goes_on(
    tmp_path, fake_openai
):
    # A full disk (here: a file size limit, which fails writes the same way) ended the
    # run with a traceback from deep in the session writer.
    ws = tmp_path / "ws"
    ws.mkdir()
    fake_openai.enqueue(Reply(calls=[Call("bash", {"command": "seq 1 30000"})]), Reply("x"))

    def small_files() -> None:
        resource.setrlimit(resource.RLIMIT_FSIZE, (20_000, 20_000))

    args = ["--approval", "full", "count"]
    full = subprocess.run(
        [sys.executable, "-m", "lathe", "run", "--model", "m", "--base-url",
         fake_openai.base_url, "-C", str(ws), *args],
        cwd=tmp_path, env=_env(tmp_path), capture_output=True, text=True, timeout=120,
        stdin=subprocess.DEVNULL, preexec_fn=small_files,
    )  # fmt: skip

    assert full.returncode not in (0, 1), full.stderr
    assert "Traceback" not in full.stderr
    last = full.stderr.splitlines()[-1]
    assert last.startswith("lathe: could not write the session ") and "--continue" in last

    fake_openai.responder = lambda body: Reply("Counted.")
    resumed = lathe_run(fake_openai, ws, tmp_path, "--approval", "full", "--continue")
    assert resumed.returncode == 0, resumed.stderr
    tool = [m for m in fake_openai.chat_bodies()[-1]["messages"] if m["role"] == "tool"]
    assert "interrupted" in tool[-1]["content"]


def _a_read_then_done(tmp_path: Path, fake_openai) -> tuple[Path, list[str], Path]:
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "a.py").write_text("x = 1\n")
    fake_openai.enqueue(Reply(calls=[Call("read", {"path": "a.py"})]), Reply("x is 1."))
    done = lathe_run(fake_openai, ws, tmp_path, "THE TASK: what is x?")
    assert done.returncode == 0, done.stderr
    [session] = (tmp_path / "home" / "sessions").rglob("*.jsonl")
    lines = session.read_text().splitlines()
    return ws, lines, session


def _line_of(lines: list[str], role: str) -> int:
    return next(
        i for i, line in enumerate(lines)
        if json.loads(line).get("message", {}).get("role") == role
    )  # fmt: skip


def test_a_corrupt_line_holding_a_tool_call_leaves_no_result_without_its_call(
    tmp_path, fake_openai
):
    # The result of the lost call was sent on its own: every provider refuses that
    # (HTTP 400), so every --continue of the session ended in a provider error.
    ws, lines, session = _a_read_then_done(tmp_path, fake_openai)
    call_line = _line_of(lines, "assistant")
    lines[call_line] = lines[call_line][:60]
    session.write_text("\n".join(lines) + "\n")

    fake_openai.enqueue(Reply("Went on."))
    resumed = lathe_run(fake_openai, ws, tmp_path, "--continue", "go on")

    assert resumed.returncode == 0, resumed.stderr
    assert "corrupt entry skipped" in resumed.stderr
    sent = fake_openai.chat_bodies()[-1]["messages"]
    calls = {c["id"] for m in sent for c in m.get("tool_calls") or ()}
    assert [m for m in sent if m["role"] == "tool" and m["tool_call_id"] not in calls] == []
    assert "THE TASK" in json.dumps(sent)


def test_a_result_recorded_after_a_queued_message_goes_on_as_the_result(tmp_path, fake_openai):
    # A served session keeps a message queued at close after a call paused on its
    # approval, so the call's result comes after it in the file. `--resume` called the
    # call interrupted and dropped its real result: the model was told a write that
    # happened had not.
    from lathe.session import SessionStore
    from lathe.types import AssistantMessage, ToolCall, ToolResultMessage, UserMessage

    ws = tmp_path / "ws"
    ws.mkdir()
    call = ToolCall(id="call_w", name="write", arguments='{"path": "new.txt"}')
    with SessionStore(tmp_path / "home").create(ws, "m") as stored:
        for message in (
            UserMessage(content="WRITE a file"),
            AssistantMessage(tool_calls=(call,)),
            UserMessage(content="and also add a README"),
            ToolResultMessage(tool_call_id="call_w", name="write", content="wrote new.txt"),
            AssistantMessage(text="wrote it"),
        ):
            stored.append_message(message)

    fake_openai.enqueue(Reply("Went on."))
    resumed = lathe_run(fake_openai, ws, tmp_path, "--resume", stored.id, "go on")

    assert resumed.returncode == 0, resumed.stderr
    sent = [m for m in fake_openai.chat_bodies()[-1]["messages"] if m["role"] != "system"]
    assert [m["role"] for m in sent[:4]] == ["user", "assistant", "tool", "user"]
    assert sent[2]["content"] == "wrote new.txt"
    assert sent[3]["content"].startswith("and also add a README")


def test_a_corrupt_first_line_leaves_a_conversation_that_starts_with_the_user(
    tmp_path, fake_openai
):
    ws, lines, session = _a_read_then_done(tmp_path, fake_openai)
    task_line = _line_of(lines, "user")
    lines[task_line] = lines[task_line][:40]
    session.write_text("\n".join(lines) + "\n")

    fake_openai.enqueue(Reply("Went on."))
    resumed = lathe_run(fake_openai, ws, tmp_path, "--continue", "go on")

    assert resumed.returncode == 0, resumed.stderr
    sent = [m for m in fake_openai.chat_bodies()[-1]["messages"] if m["role"] != "system"]
    assert sent[0]["role"] == "user"
    assert "lost" in sent[0]["content"]


def test_sessions_show_writes_out_the_escape_codes_a_reply_held(tmp_path, fake_openai):
    # CSI codes were taken out but an OSC title (and BEL) reached the terminal.
    ws = tmp_path / "ws"
    ws.mkdir()
    fake_openai.enqueue(Reply("Done \x1b]0;pwned\x07 and \x1b[2J here."))
    assert lathe_run(fake_openai, ws, tmp_path, "say it").returncode == 0
    [session] = (tmp_path / "home" / "sessions").rglob("*.jsonl")

    shown = _lathe(tmp_path, "sessions", "show", session.stem.split("_")[-1], prefix=[])

    assert shown.returncode == 0, shown.stderr
    assert "\x1b" not in shown.stdout and "\x07" not in shown.stdout
    assert "Done \\x1b]0;pwned\\x07 and \\x1b[2J here." in shown.stdout
