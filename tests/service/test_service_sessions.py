"""Sessions behind one server: isolation, the shared command limit, fork, resume,
delete and abort, and a server killed with -9 that comes back with every session and
pending approval."""

from __future__ import annotations

import json
import os

import pytest
from tests.fakes.openai_server import Call, Hang, Reply
from tests.service.scripts import by_marker, fix_add, workspace_for
from tests.service.server import ServeProcess

from lathe.client import ServiceError
from lathe.session import SessionStore


def _wait_for(client, session_id, kind, after=0):
    *_, event = client.events(session_id, after=after, until=kind)
    assert event.type == kind
    return event


def test_sessions_never_see_each_others_events_files_or_approvals(served, fake_openai, tmp_path):
    markers = ["alpha", "beta"]
    fake_openai.responder = by_marker({m: fix_add(m) for m in markers})
    with served.client() as client:
        ids = {}
        for marker in markers:
            ws = workspace_for(tmp_path, marker)
            ids[marker] = client.create_session(
                str(ws), model="m", base_url=fake_openai.base_url, approval="ask"
            ).id
            client.send(ids[marker], f"task {marker}: fix add")
        asked = {m: _wait_for(client, ids[m], "approval_requested") for m in markers}
        # An approval of one session cannot be answered through another.
        with pytest.raises(ServiceError) as crossed:
            client.answer(ids["beta"], asked["alpha"].data["approval_id"], "once")
        assert crossed.value.status == 404
        for marker in markers:
            client.answer(ids[marker], asked[marker].data["approval_id"], "once")
            _wait_for(client, ids[marker], "run_finished", after=asked[marker].id)
        for marker, other in [("alpha", "beta"), ("beta", "alpha")]:
            events = list(client.events(ids[marker], follow=False))
            text = "\n".join(str(e.data) for e in events)
            assert marker in text and other not in text
            assert str(tmp_path / other) not in text
    # The edit reached only its own workspace.
    for marker in markers:
        assert "a + b" in (tmp_path / marker / "calc.py").read_text()


def test_a_workspace_inside_a_live_sessions_workspace_is_refused(served, fake_openai, tmp_path):
    projects = tmp_path / "projects"  # beside the server's data folder, not holding it
    outer = workspace_for(projects, "outer")
    inner = outer / "pkg"
    inner.mkdir()
    with served.client() as client:
        first = client.create_session(str(outer), model="m", base_url=fake_openai.base_url)
        for nested in (inner, outer, projects):
            with pytest.raises(ServiceError) as conflict:
                client.create_session(str(nested), model="m", base_url=fake_openai.base_url)
            assert conflict.value.status == 409
            assert first.id in str(conflict.value)
        client.delete(first.id)
        assert client.create_session(str(inner), model="m", base_url=fake_openai.base_url).id


def test_commands_beyond_the_limit_queue_visibly_and_all_run(tmp_path, fake_openai):
    markers = ["one", "two", "three"]
    fake_openai.responder = by_marker({
        m: [Reply(calls=[Call("bash", {"command": f"sleep 1; echo {m}-ran"})]), Reply(f"{m} ok")]
        for m in markers
    })  # fmt: skip
    with (
        ServeProcess(tmp_path / "home", "--max-commands", "1") as server,
        server.client() as client,
    ):
        ids = []
        for marker in markers:
            ws = workspace_for(tmp_path, marker)
            ids.append(client.create_session(str(ws), model="m", base_url=fake_openai.base_url).id)
        for marker, session_id in zip(markers, ids, strict=True):
            client.send(session_id, f"task {marker}")
        runs = [list(client.events(i, until="run_finished")) for i in ids]
    queued = [e for run in runs for e in run if e.type == "queued"]
    assert queued and all(e.data["what"] == "command" and e.data["limit"] == 1 for e in queued)
    for marker, run in zip(markers, runs, strict=True):
        [result] = [e for e in run if e.type == "tool_finished"]
        assert f"{marker}-ran" in result.data["output"]
        assert run[-1].data["status"] == "unverified"


def test_fork_resume_delete_and_abort(served, fake_openai, tmp_path):
    ws = workspace_for(tmp_path, "ws1")
    fake_openai.enqueue(Reply("first answer"), Hang(30))
    with served.client() as client:
        session = client.create_session(str(ws), model="m", base_url=fake_openai.base_url)
        client.send(session.id, "task one")
        first = _wait_for(client, session.id, "run_finished")
        # abort: a run waiting on the model stops, interrupted.
        client.send(session.id, "task two")
        started = _wait_for(client, session.id, "turn_started", after=first.id)
        assert client.abort(session.id) is True
        end = _wait_for(client, session.id, "run_finished", after=started.id)
        assert end.data["status"] == "interrupted"
        # fork: a new session with the conversation; the original stops being served.
        forked = client.fork(session.id)
        assert forked.id != session.id
        assert [s.id for s in client.sessions()] == [forked.id]
        assert "task one" in client.transcript(forked.id)
        # delete keeps the file; resume serves the stored session again.
        deleted = client.delete(forked.id)
        assert deleted["status"] == "stopped"
        assert client.sessions() == []
        resumed = client.resume(session.id)
        assert resumed.id == session.id and resumed.status == "idle"
        assert "task two" in client.transcript(session.id)
        with pytest.raises(ServiceError) as unknown:
            client.resume("ffffffffffff")
        assert unknown.value.status == 404


def test_a_server_killed_with_9_comes_back_with_every_session_and_pending_approval(
    tmp_path, fake_openai
):
    markers = [f"s{n}" for n in range(5)]
    scripts = {m: fix_add(m) for m in markers}
    scripts["s4"] = [Hang(60)]  # mid-request when the server dies
    fake_openai.responder = by_marker(scripts)
    home = tmp_path / "home"
    server = ServeProcess(home).start()
    ids, pending = {}, {}
    with server.client() as client:
        for marker in markers:
            ws = workspace_for(tmp_path, marker)
            approval = "auto" if marker in ("s3", "s4") else "ask"
            ids[marker] = client.create_session(
                str(ws), model="m", base_url=fake_openai.base_url, approval=approval
            ).id
            client.send(ids[marker], f"task {marker}: fix add")
        for marker in markers[:3]:
            pending[marker] = _wait_for(client, ids[marker], "approval_requested")
        last_seen = _wait_for(client, ids["s3"], "run_finished").id
        _wait_for(client, ids["s4"], "turn_started")
        assert client.session(ids["s4"]).status == "running"
    server.kill()
    fake_openai.responder = by_marker({**scripts, "s4": [Reply("s4 after the crash")]})

    for path in (home / "sessions").rglob("*.jsonl"):  # every file loads whole
        session = SessionStore(home).open_path(path, readonly=True)
        assert session.warnings == []

    with ServeProcess(home) as again, again.client() as client:
        listed = {s.id: s for s in client.sessions()}
        assert set(listed) == set(ids.values())
        for marker in markers[:3]:
            assert listed[ids[marker]].status == "waiting_approval"
            [approval] = client.approvals(ids[marker])
            assert approval["id"] == pending[marker].data["approval_id"]
        assert listed[ids["s3"]].status == "idle"
        # The run the crash cut is over, and ended so on the stream (as a run stopped
        # with the server is); the session takes the next message.
        s4 = listed[ids["s4"]]
        assert (s4.status, s4.raw["last_run"]["status"]) == ("idle", "interrupted")
        client.send(ids["s4"], "go on")
        *_, end = client.events(ids["s4"], after=s4.raw["last_event_id"], until="run_finished")
        assert end.data["answer"] == "s4 after the crash"
        # Nothing was lost from the stream: the replay still has every event.
        assert [e.id for e in client.events(ids["s3"], follow=False)] == list(
            range(1, last_seen + 1)
        )
        # Answering a restored approval runs the paused call, then the run goes on.
        s0 = ids["s0"]
        client.answer(s0, pending["s0"].data["approval_id"], "once")
        after = listed[s0].raw["last_event_id"]  # past the cut run's own run_finished
        rest = list(client.events(s0, after=after, until="run_finished"))
        [edited] = [e for e in rest if e.type == "tool_finished"]
        assert not edited.data["is_error"]
        assert rest[-1].data["status"] == "unverified"
        assert "a + b" in (tmp_path / "s0" / "calc.py").read_text()
        # A denied one tells the model and leaves the file alone.
        s1 = ids["s1"]
        client.answer(s1, pending["s1"].data["approval_id"], "deny", "not now")
        after = listed[s1].raw["last_event_id"]
        rest = list(client.events(s1, after=after, until="run_finished"))
        assert "a - b" in (tmp_path / "s1" / "calc.py").read_text()
        assert client.session(s1).status == "idle"


def test_model_calls_beyond_the_endpoint_limit_queue_visibly(tmp_path, fake_openai):
    config = tmp_path / "config.toml"
    config.write_text("[serve]\nmax_model_calls = 1\n")
    markers = ["first", "second"]
    fake_openai.responder = by_marker({m: [Reply(f"{m} answer", trickle_s=0.2)] for m in markers})
    env = {"LATHE_CONFIG": str(config)}
    with ServeProcess(tmp_path / "home", env=env) as server, server.client() as client:
        ids = [
            client.create_session(
                str(workspace_for(tmp_path, m)), model="m", base_url=fake_openai.base_url
            ).id
            for m in markers
        ]
        for marker, session_id in zip(markers, ids, strict=True):
            client.send(session_id, f"task {marker}")
        runs = [list(client.events(i, until="run_finished")) for i in ids]
    queued = [e.data for run in runs for e in run if e.type == "queued"]
    assert queued == [{"type": "queued", "what": "model_call", "waiting": 1, "limit": 1}]
    assert all(run[-1].data["answer"].endswith("answer") for run in runs)


@pytest.mark.waits
def test_an_unattended_sessions_approval_left_by_a_crash_is_denied_in_time(tmp_path, fake_openai):
    fake_openai.responder = by_marker({"lone": fix_add("lone")})
    home = tmp_path / "home"
    server = ServeProcess(home).start()
    with server.client() as client:
        session = client.create_session(
            str(workspace_for(tmp_path, "lone")), model="m", base_url=fake_openai.base_url,
            approval="ask", approval_timeout_s=5,
        )  # fmt: skip
        client.send(session.id, "task lone: fix add")
        _wait_for(client, session.id, "approval_requested")
    server.kill()
    with ServeProcess(home) as again, again.client() as client:
        restored = client.session(session.id)
        assert restored.status == "waiting_approval"
        after = restored.raw["last_event_id"]  # past the cut run's own run_finished
        rest = list(client.events(session.id, after=after, until="run_finished"))
    resolved = next(e for e in rest if e.type == "approval_resolved")
    assert resolved.data == {**resolved.data, "choice": "deny", "by": "timeout"}
    assert rest[-1].data["status"] == "unverified"
    assert "a - b" in (tmp_path / "lone" / "calc.py").read_text()


def test_a_server_stopped_with_sigterm_keeps_pending_approvals_pending(tmp_path, fake_openai):
    fake_openai.responder = by_marker({"calm": fix_add("calm")})
    home = tmp_path / "home"
    with ServeProcess(home) as server, server.client() as client:
        session = client.create_session(
            str(workspace_for(tmp_path, "calm")), model="m", base_url=fake_openai.base_url,
            approval="ask",
        )  # fmt: skip
        client.send(session.id, "task calm: fix add")
        asked = _wait_for(client, session.id, "approval_requested")
    # (the server was stopped with SIGTERM, as a service manager restarts it)
    with ServeProcess(home) as again, again.client() as client:
        restored = client.session(session.id)
        assert restored.status == "waiting_approval"
        [pending] = client.approvals(session.id)
        assert pending["id"] == asked.data["approval_id"]
        client.answer(session.id, pending["id"], "once")
        after = restored.raw["last_event_id"]  # past the shutdown's own run_finished
        rest = list(client.events(session.id, after=after, until="run_finished"))
    edits = [e for e in rest if e.type == "tool_finished"]
    assert edits and not edits[-1].data["is_error"]
    assert "a + b" in (tmp_path / "calm" / "calc.py").read_text()


def test_a_pending_approval_stays_pending_through_a_second_restart(tmp_path, fake_openai):
    # The first restart kept it; the next stop (or a DELETE of the restored session)
    # denied it and recorded an interrupted run.
    fake_openai.responder = by_marker({"twice": fix_add("twice")})
    home = tmp_path / "home"
    with ServeProcess(home) as server, server.client() as client:
        session = client.create_session(
            str(workspace_for(tmp_path, "twice")), model="m", base_url=fake_openai.base_url,
            approval="ask",
        )  # fmt: skip
        client.send(session.id, "task twice: fix add")
        asked = _wait_for(client, session.id, "approval_requested")
    for _ in range(2):
        with ServeProcess(home) as again, again.client() as client:
            [pending] = client.approvals(session.id)
            assert pending["id"] == asked.data["approval_id"]
    with ServeProcess(home) as again, again.client() as client:
        client.delete(session.id)
        client.resume(session.id)
        [pending] = client.approvals(session.id)
        client.answer(session.id, pending["id"], "once")
        _wait_for(client, session.id, "tool_finished")
    assert "a + b" in (tmp_path / "twice" / "calc.py").read_text()


def test_subagents_commands_count_against_the_servers_limit(tmp_path, fake_openai):
    def child(name):
        return [Reply(calls=[Call("bash", {"command": f"sleep 1; echo {name}-ran"})]),
                Reply(f"{name} finished")]  # fmt: skip

    parent = [
        Reply(calls=[
            Call("task", {"description": "first", "prompt": "kid alpha: run the command"}),
            Call("task", {"description": "second", "prompt": "kid beta: run the command"}),
        ]),
        Reply("both done"),
    ]  # fmt: skip
    fake_openai.responder = by_marker(
        {"parentx": parent, "kid alpha": child("alpha"), "kid beta": child("beta")}
    )
    with (
        ServeProcess(tmp_path / "home", "--max-commands", "1") as server,
        server.client() as client,
    ):
        session = client.create_session(
            str(workspace_for(tmp_path, "family")), model="m", base_url=fake_openai.base_url
        )
        client.send(session.id, "parentx: split the work")
        events = list(client.events(session.id, until="run_finished"))
    assert [e.data["what"] for e in events if e.type == "queued"] == ["command"]
    children_ran = [e for e in events if e.type == "child_event" and "-ran" in str(e.data)]
    assert children_ran


def test_a_session_that_cannot_come_back_is_a_problem_not_a_server_that_will_not_start(
    tmp_path, fake_openai
):
    home = tmp_path / "home"
    ws = workspace_for(tmp_path, "gone")
    with ServeProcess(home) as server, server.client() as client:
        kept = client.create_session(str(workspace_for(tmp_path, "kept")), model="m",
                                     base_url=fake_openai.base_url)  # fmt: skip
        lost = client.create_session(str(ws), model="m", base_url=fake_openai.base_url)
    ws.rename(tmp_path / "moved")

    with ServeProcess(home) as again, again.client() as client:
        assert [s.id for s in client.sessions()] == [kept.id]
        problems = client._call("GET", "/v1/sessions")["problems"]
        assert len(problems) == 1 and lost.id in problems[0], problems


def test_a_problem_session_resumed_once_its_workspace_is_back_keeps_its_options(
    tmp_path, fake_openai
):
    # Its options came from nowhere: "ask" became "auto" and its endpoint was dropped,
    # so its requests would have gone to the provider's default one with the server's key.
    home = tmp_path / "home"
    ws = workspace_for(tmp_path, "away")
    fake_openai.enqueue(Reply("answered"))
    with ServeProcess(home) as server, server.client() as client:
        lost = client.create_session(str(ws), model="m", base_url=fake_openai.base_url,
                                     approval="ask", max_turns=7, verify="true")  # fmt: skip
    ws.rename(tmp_path / "moved")
    with ServeProcess(home) as again, again.client() as client:
        assert lost.id in client._call("GET", "/v1/sessions")["problems"][0]
        (tmp_path / "moved").rename(ws)
        resumed = client.resume(lost.id)
        client.send(lost.id, "task after the move")
        _wait_for(client, lost.id, "run_finished")
    assert (resumed.raw["approval"], resumed.raw["verify"]) == ("ask", "true")
    record = json.loads((home / "serve" / "sessions" / f"{lost.id}.json").read_text())
    assert (record["max_turns"], record["base_url"]) == (7, fake_openai.base_url)
    assert len(fake_openai.chat_bodies()) == 1  # the run went to the session's endpoint


def test_a_create_the_config_cannot_honour_is_a_400_and_leaves_no_session(
    served, fake_openai, tmp_path
):
    ws = workspace_for(tmp_path, "badconfig")
    (ws / ".lathe").mkdir()
    (ws / ".lathe" / "config.toml").write_text('[agent]\nmax_turns = "x"\n')
    with served.client() as client:
        with pytest.raises(ServiceError) as refused:
            client.create_session(str(ws), model="m", base_url=fake_openai.base_url)
        assert refused.value.status == 400, refused.value
        assert "max_turns" in str(refused.value)
        assert client.sessions() == []
    assert list((served.home / "sessions").rglob("*.jsonl")) == []


def test_resume_keeps_the_options_the_session_was_served_with(served, fake_openai, tmp_path):
    ws = workspace_for(tmp_path, "ws1")
    fake_openai.enqueue(Reply("first answer"), Reply("second answer"))
    with served.client() as client:
        session = client.create_session(
            str(ws), model="m", base_url=fake_openai.base_url, approval="ask", max_turns=7
        )
        client.send(session.id, "task one")
        first = _wait_for(client, session.id, "run_finished")
        client.delete(session.id)

        resumed = client.resume(session.id)
        client.send(session.id, "task two")
        _wait_for(client, session.id, "run_finished", after=first.id)

    assert (resumed.model, resumed.raw["approval"]) == (session.model, "ask")
    assert len(fake_openai.chat_bodies()) == 2  # the second run went to the same endpoint
    assert fake_openai.chat_bodies()[-1]["model"] == fake_openai.chat_bodies()[0]["model"]


def test_the_transcript_names_checkpoints_by_number_as_sessions_show_does(
    served, fake_openai, tmp_path
):
    ws = workspace_for(tmp_path, "numbered")
    fake_openai.enqueue(*fix_add("numbered"))
    with served.client() as client:
        session = client.create_session(str(ws), model="m", base_url=fake_openai.base_url,
                                        approval="full")  # fmt: skip
        client.send(session.id, "fix add")
        _wait_for(client, session.id, "run_finished")
        text = client.transcript(session.id)

    assert "[checkpoint #" in text and "after turn 1]" in text, text


def test_a_message_of_whitespace_alone_is_refused_and_spends_nothing(served, fake_openai, tmp_path):
    ws = workspace_for(tmp_path, "blank")
    with served.client() as client:
        session = client.create_session(str(ws), model="m", base_url=fake_openai.base_url)
        with pytest.raises(ServiceError) as refused:
            client.send(session.id, "   \n")
    assert refused.value.status == 422
    assert fake_openai.chat_bodies() == []


def test_a_message_queued_when_the_server_stops_is_kept_in_the_session(tmp_path, fake_openai):
    # It was dropped with the run a SIGTERM stopped: the person's words were gone.
    fake_openai.enqueue(Hang(60))
    home = tmp_path / "home"
    with ServeProcess(home) as server, server.client() as client:
        session = client.create_session(
            str(workspace_for(tmp_path, "calm")), model="m", base_url=fake_openai.base_url
        )
        client.send(session.id, "first: look at calc.py")
        _wait_for(client, session.id, "turn_started")
        client.send(session.id, "QUEUED: then fix add")
        assert client.session(session.id).raw["queued_messages"] == 1
    [path] = (home / "sessions").rglob("*.jsonl")
    assert "QUEUED: then fix add" in path.read_text()
    # And its stream says so: the page had gone on showing "Queued" for a message that
    # then appeared nowhere.
    with ServeProcess(home) as again, again.client() as client:
        assert client.session(session.id).raw["queued_messages"] == 0
        told = [e.data["message"] for e in client.events(session.id, follow=False)
                if e.type == "notice"]  # fmt: skip
    assert any("QUEUED: then fix add" in text and "next message" in text for text in told), told


def test_a_restarted_server_shows_how_each_sessions_last_run_ended(tmp_path, fake_openai):
    # `last_run` was null after a restart, as if the session had never run.
    fake_openai.enqueue(Reply("Looked around."))
    home = tmp_path / "home"
    with ServeProcess(home) as server, server.client() as client:
        session = client.create_session(
            str(workspace_for(tmp_path, "calm")), model="m", base_url=fake_openai.base_url
        )
        client.send(session.id, "look around")
        _wait_for(client, session.id, "run_finished")
    with ServeProcess(home) as again, again.client() as client:
        last = client.session(session.id).raw["last_run"]
    assert last is not None and last["status"] == "unverified"


def test_an_answer_kept_for_a_paused_call_never_approves_another_call(tmp_path, fake_openai):
    # Answered after a restart, the paused call's run failed before the call ran (the
    # workspace was busy); the answer stayed, and approved a later, different command
    # that reused the call id: `echo PWNED > pwned.txt` ran without being asked.
    import time

    from lathe.workspace_lock import hold_workspace

    def respond(body):
        messages = body["messages"]
        if messages[-1]["role"] == "tool":
            return Reply("done")
        second = "second" in str(messages[-1].get("content"))
        command = "echo PWNED > pwned.txt" if second else "echo harmless"
        return Reply(calls=[Call("bash", {"command": command})])

    fake_openai.responder = respond
    home = tmp_path / "home"
    ws = workspace_for(tmp_path, "calm")
    with ServeProcess(home) as server, server.client() as client:
        session = client.create_session(
            str(ws), model="m", base_url=fake_openai.base_url, approval="ask"
        )
        client.send(session.id, "first")
        _wait_for(client, session.id, "approval_requested")
    with ServeProcess(home) as again, again.client() as client:
        [pending] = client.approvals(session.id)
        os.environ["LATHE_HOME"] = str(home)
        try:
            with hold_workspace(ws, doing="another lathe", when_busy="then try again"):
                client.answer(session.id, pending["id"], "once")
                deadline = time.monotonic() + 30
                while client.session(session.id).status != "idle":
                    assert time.monotonic() < deadline
                    time.sleep(0.1)
        finally:
            del os.environ["LATHE_HOME"]
        after = client.session(session.id).raw["last_event_id"]
        client.send(session.id, "second")
        for event in client.events(session.id, after=after):
            if event.type in ("approval_requested", "run_finished"):
                break
    assert event.type == "approval_requested"  # asked, not answered by the old "once"
    assert not (ws / "pwned.txt").exists()


def test_resuming_a_session_another_process_holds_is_a_conflict(served, fake_openai, tmp_path):
    # It answered 400, as for a bad request, where the API says 409 for a conflict.
    from lathe.session.lock import SessionLock

    ws = workspace_for(tmp_path, "held")
    fake_openai.enqueue(Reply("first answer"))
    with served.client() as client:
        session = client.create_session(str(ws), model="m", base_url=fake_openai.base_url)
        client.send(session.id, "task one")
        _wait_for(client, session.id, "run_finished")
        client.delete(session.id)
        [path] = (served.home / "sessions").rglob(f"*{session.id}.jsonl")
        held = SessionLock.acquire(path, session.id)  # as a `lathe run --resume` would
        try:
            with pytest.raises(ServiceError) as busy:
                client.resume(session.id)
        finally:
            held.release()
        assert busy.value.status == 409, busy.value
        assert "in use by another lathe process" in str(busy.value)
