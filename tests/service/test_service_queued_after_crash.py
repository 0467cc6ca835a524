"""A message the API accepted as queued (202, `queued: true`) is kept when the server
dies before it runs (kill -9), as it is on SIGTERM: in the conversation as the
person's, with a notice saying so, and the model reads it when the session goes on."""

from __future__ import annotations

from tests.fakes.openai_server import Call, Hang, Reply
from tests.service.scripts import workspace_for
from tests.service.server import ServeProcess


def _edit_then_answer(body):
    if body["messages"][-1]["role"] == "tool":
        return Reply("fixed")
    if "fix add" in str(body["messages"][-1].get("content")):
        return Reply(
            calls=[Call("edit", {"path": "calc.py", "old_string": "a - b", "new_string": "a + b"})]
        )
    return Reply("ok")


def test_a_message_queued_behind_an_approval_survives_a_kill_9(tmp_path, fake_openai):
    # It lived only in the server's memory: after kill -9 `queued_messages` was 0, the
    # text was nowhere under LATHE_HOME, and the model never saw it.
    fake_openai.responder = _edit_then_answer
    home = tmp_path / "home"
    server = ServeProcess(home).start()
    with server.client() as client:
        session = client.create_session(
            str(workspace_for(tmp_path, "crash")), model="m",
            base_url=fake_openai.base_url, approval="ask",
        )  # fmt: skip
        client.send(session.id, "fix add")
        *_, asked = client.events(session.id, until="approval_requested")
        assert client.send(session.id, "IMPORTANT: then add a test for add()") is True
    server.kill()
    with ServeProcess(home) as again, again.client() as client:
        told = list(client.events(session.id, after=asked.id, follow=False))
        blocks = client._call("GET", f"/v1/sessions/{session.id}/transcript")["blocks"]
        [pending] = client.approvals(session.id)
        before = client.session(session.id).raw["last_event_id"]
        client.answer(session.id, pending["id"], "once")
        *_, finished = client.events(session.id, after=before, until="run_finished")
    notices = [e.data["message"] for e in told if e.type == "notice"]
    assert any("IMPORTANT: then add a test" in n and "queued" in n for n in notices), told
    users = [b["text"] for b in blocks if b["kind"] == "user"]
    assert users[-1] == "IMPORTANT: then add a test for add()"
    assert finished.data["status"] == "unverified"
    sent = fake_openai.chat_bodies()[-1]["messages"]
    assert any("IMPORTANT: then add a test" in str(m.get("content")) for m in sent)
    assert list(home.rglob("*.queued")) == []  # kept once, in the conversation


def test_a_message_queued_behind_a_run_a_kill_9_cut_is_kept(tmp_path, fake_openai):
    # The run it waited behind ends "interrupted" as the server comes back; the message
    # is the person's last word in the conversation, and the next run sends it.
    fake_openai.enqueue(Hang(30))
    home = tmp_path / "home"
    server = ServeProcess(home).start()
    with server.client() as client:
        session = client.create_session(
            str(workspace_for(tmp_path, "cut")), model="m", base_url=fake_openai.base_url
        )
        client.send(session.id, "first task")
        *_, started = client.events(session.id, until="turn_started")
        assert client.send(session.id, "IMPORTANT second task") is True
    server.kill()
    fake_openai.responder = lambda body: Reply("done")
    with ServeProcess(home) as again, again.client() as client:
        restored = client.session(session.id)
        told = list(client.events(session.id, after=started.id, follow=False))
        client.send(session.id, "go on")
        list(client.events(session.id, after=restored.raw["last_event_id"], until="run_finished"))
    assert restored.status == "idle" and restored.raw["queued_messages"] == 0
    kinds = [e.type for e in told]
    assert kinds.index("run_finished") < kinds.index("notice"), kinds
    last = fake_openai.chat_bodies()[-1]["messages"][-1]  # consecutive user messages join
    assert last["content"] == "first task\n\nIMPORTANT second task\n\ngo on"
