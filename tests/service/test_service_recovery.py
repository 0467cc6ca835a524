"""A served session that comes back (resumed after a DELETE, restored by a server
started again) goes on from a conversation a strict API accepts, and a run the
server's crash cut ends on the stream and in the session when the server is back."""

from __future__ import annotations

from tests.fakes.openai_server import Call, ErrorReply, Reply
from tests.service.scripts import workspace_for
from tests.service.server import ServeProcess

from lathe.session import RunEndEntry, SessionStore
from lathe.types import AssistantMessage, ToolCall, ToolResultMessage, UserMessage

OUT_OF_ORDER = (
    "An assistant message with 'tool_calls' must be followed by tool messages "
    "responding to each 'tool_call_id'."
)


def _out_of_order(messages: list[dict]) -> bool:
    """Whether a call's results do not directly follow it, which api.openai.com refuses."""
    for index, message in enumerate(messages):
        calls = {c["id"] for c in message.get("tool_calls") or []}
        for later in messages[index + 1 :]:
            if later.get("role") != "tool":
                break
            calls.discard(later["tool_call_id"])
        if calls:
            return True
    return False


def _strict(respond):
    """`respond` behind the ordering rule of api.openai.com (an HTTP 400 otherwise)."""

    def strict(body):
        if _out_of_order(body["messages"]):
            return ErrorReply(400, OUT_OF_ORDER)
        return respond(body)

    return strict


def _write_then_answer(body):
    last = body["messages"][-1]
    if last["role"] == "tool":
        return Reply("wrote it")
    if "WRITE" in str(last.get("content")):
        return Reply(calls=[Call("write", {"path": "new.txt", "content": "hi\n"})])
    return Reply("ok")


def _conversation(body):
    return [m for m in body["messages"] if m["role"] != "system"]


def _run_after(client, session_id, after):
    return list(client.events(session_id, after=after, until="run_finished"))


def test_a_message_queued_behind_a_pending_approval_goes_after_the_calls_result(
    served, fake_openai, tmp_path
):
    # Kept in the session after the call its approval held open, the message came
    # before that call's result once it ran: every later request was an HTTP 400.
    fake_openai.responder = _strict(_write_then_answer)
    ws = workspace_for(tmp_path, "queued")
    with served.client() as client:
        session = client.create_session(
            str(ws), model="m", base_url=fake_openai.base_url, approval="ask"
        )
        client.send(session.id, "WRITE a file")
        *_, asked = client.events(session.id, until="approval_requested")
        assert client.send(session.id, "and also add a README") is True
        client.delete(session.id)
        resumed = client.resume(session.id)
        [pending] = client.approvals(session.id)
        assert pending["id"] == asked.data["approval_id"]
        client.answer(session.id, pending["id"], "once")
        answered = _run_after(client, session.id, resumed.raw["last_event_id"])
        later = client.session(session.id).raw["last_event_id"]
        client.send(session.id, "anything else?")
        next_run = _run_after(client, session.id, later)
    assert [answered[-1].data["status"], next_run[-1].data["status"]] == ["unverified"] * 2
    assert (ws / "new.txt").read_text() == "hi\n"
    bodies = fake_openai.chat_bodies()
    assert not any(_out_of_order(b["messages"]) for b in bodies)
    answered_with = [(m["role"], m.get("content")) for m in _conversation(bodies[1])]
    assert [role for role, _ in answered_with[1:4]] == ["assistant", "tool", "user"]
    assert answered_with[3][1].startswith("and also add a README")


def test_a_session_file_with_a_message_between_a_call_and_its_result_is_sent_in_order(
    served, fake_openai, tmp_path
):
    # A file written by the defect above: the call's result came after the message.
    # The session's repair made it valid by calling the call interrupted and dropping
    # its real result, so the model was told a write that happened had not.
    fake_openai.responder = _strict(_write_then_answer)
    ws = workspace_for(tmp_path, "broken")
    call = ToolCall(id="call_w", name="write", arguments='{"path": "new.txt"}')
    with SessionStore(served.home).create(ws, "m") as stored:
        for message in (
            UserMessage(content="WRITE a file"),
            AssistantMessage(tool_calls=(call,)),
            UserMessage(content="and also add a README"),
            ToolResultMessage(tool_call_id="call_w", name="write", content="wrote new.txt"),
            UserMessage(content="Continue the task from where you stopped."),
            AssistantMessage(text="wrote it"),
        ):
            stored.append_message(message)
        stored.append(RunEndEntry(status="unverified", turns=2))
    with served.client() as client:
        # Its file says no approval mode (written here as an older lathe would): named.
        client.resume(stored.id, model="m", base_url=fake_openai.base_url, approval="auto")
        client.send(stored.id, "anything else?")
        run = _run_after(client, stored.id, 0)
    assert run[-1].data["status"] == "unverified"
    [body] = fake_openai.chat_bodies()
    sent = [(m["role"], m.get("content")) for m in _conversation(body)]
    assert [role for role, _ in sent[1:4]] == ["assistant", "tool", "user"]
    assert sent[2][1] == "wrote new.txt"
    assert sent[3][1].startswith("and also add a README")


def _sleep_when_asked(body):
    if "SLEEP" in str(body["messages"][-1].get("content")):
        return Reply(calls=[Call("bash", {"command": "sleep 30"})])
    return Reply("ok")


def test_a_run_the_servers_crash_cut_ends_when_the_server_is_back(tmp_path, fake_openai):
    # After kill -9 mid-run the stream never got the run's end: a client following it
    # until `run_finished` waited for ever, `lathe attach` showed the run going on, and
    # `last_run` named the run before it.
    fake_openai.responder = _strict(_sleep_when_asked)
    home = tmp_path / "home"
    server = ServeProcess(home).start()
    with server.client() as client:
        session = client.create_session(
            str(workspace_for(tmp_path, "cut")), model="m", base_url=fake_openai.base_url
        )
        client.send(session.id, "look around")
        _run_after(client, session.id, 0)
        client.send(session.id, "SLEEP a while")
        *_, started = client.events(session.id, until="tool_started")
    server.kill()
    with ServeProcess(home) as again, again.client() as client:
        restored = client.session(session.id)
        ended = list(client.events(session.id, after=started.id, follow=False))
        client.send(session.id, "go on")
        next_run = _run_after(client, session.id, restored.raw["last_event_id"])
    assert [e.type for e in ended] == ["tool_finished", "run_finished"]
    cut, finished = (e.data for e in ended)
    assert (cut["call_id"], cut["is_error"]) == (started.data["call_id"], True)
    assert cut["output"].startswith("interrupted")
    assert finished["status"] == "interrupted" and "server stopped" in finished["reason"]
    assert restored.status == "idle"
    assert restored.raw["last_run"] == {
        "status": "interrupted",
        "reason": finished["reason"],
        "turns": 1,
    }
    assert next_run[-1].data["status"] == "unverified"
    [path] = (home / "sessions").rglob(f"*{session.id}.jsonl")
    stored = SessionStore(home).open_path(path, readonly=True)
    ends = [e for e in stored.branch() if isinstance(e, RunEndEntry)]
    assert [e.status for e in ends] == ["unverified", "interrupted", "unverified"]


def test_a_cut_run_the_session_went_on_from_elsewhere_is_not_ended_again(tmp_path, fake_openai):
    # The attach message says `lathe -C WS --resume ID` goes on with a stopped session;
    # the journal still had the cut run's start, so the next serve recorded a "server
    # stopped" end after the runs made meanwhile, and last_run said it crashed.
    import os
    import subprocess
    import sys

    fake_openai.responder = _strict(_sleep_when_asked)
    home = tmp_path / "home"
    ws = workspace_for(tmp_path, "cut")
    server = ServeProcess(home).start()
    with server.client() as client:
        session = client.create_session(str(ws), model="m", base_url=fake_openai.base_url)
        client.send(session.id, "SLEEP a while")
        *_, started = client.events(session.id, until="tool_started")
    server.kill()
    env = {k: v for k, v in os.environ.items() if not k.startswith(("LATHE_", "OPENAI_"))}
    env.update(OPENAI_API_KEY="sk-test", LATHE_HOME=str(home))
    elsewhere = subprocess.run(
        [sys.executable, "-m", "lathe", "run", "--model", "m", "--base-url",
         fake_openai.base_url, "-C", str(ws), "--resume", session.id, "go on"],
        env=env, capture_output=True, text=True, timeout=120, stdin=subprocess.DEVNULL,
    )  # fmt: skip
    assert elsewhere.returncode == 0, elsewhere.stderr
    with ServeProcess(home) as again, again.client() as client:
        restored = client.session(session.id)
        after = list(client.events(session.id, after=started.id, follow=False))
    assert restored.raw["last_run"]["status"] == "unverified"
    assert not any(e.type == "run_finished" for e in after)


def test_a_cut_run_that_went_on_from_an_answered_approval_ends_when_the_server_is_back(
    tmp_path, fake_openai
):
    # Such a run runs the paused call before any message of its own, so "a run ended
    # since the last message" took the run before it for this one, and its cut was left.
    fake_openai.responder = _strict(_sleep_when_asked)
    home = tmp_path / "home"
    server = ServeProcess(home).start()
    with server.client() as client:
        session = client.create_session(
            str(workspace_for(tmp_path, "asked")), model="m", base_url=fake_openai.base_url,
            approval="ask",
        )  # fmt: skip
        client.send(session.id, "SLEEP a while")
        *_, asked = client.events(session.id, until="approval_requested")
        client.delete(session.id)
        client.resume(session.id)
        [pending] = client.approvals(session.id)
        client.answer(session.id, pending["id"], "once")
        *_, started = client.events(session.id, after=asked.id, until="tool_started")
    server.kill()
    with ServeProcess(home) as again, again.client() as client:
        ended = list(client.events(session.id, after=started.id, follow=False))
    assert [e.type for e in ended] == ["tool_finished", "run_finished"]
