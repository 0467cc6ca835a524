"""`lathe serve` through its HTTP API, as a client sees it: the token, sessions,
messages, the SSE stream and its replay, approvals, fork, resume, delete, abort."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys

import httpx
import pytest
from tests.fakes.openai_server import Call, Hang, Reply
from tests.service.scripts import calc_workspace
from tests.service.server import ServeProcess

from lathe.client import ServiceError
from lathe.service.app import MAX_BODY_BYTES


def _fix_script(server):
    server.enqueue(
        Reply(
            calls=[Call("edit", {"path": "calc.py", "old_string": "a - b", "new_string": "a + b"})]
        ),
        Reply("Fixed add."),
    )


def test_every_route_needs_the_token_and_a_bad_one_learns_nothing(served):
    for headers in ({}, {"Authorization": "Bearer wrong"}, {"Authorization": served.token}):
        for method, path in [("GET", "/v1/sessions"), ("GET", "/v1/openapi.json"),
                             ("POST", "/v1/sessions"), ("GET", "/v1/health")]:  # fmt: skip
            response = httpx.request(method, served.url + path, headers=headers)
            assert response.status_code == 401
            assert response.json() == {"error": "unauthorized"}
    # Nothing is parsed or routed before the token is checked.
    for path in ("/v1/sessions", "/v1/nowhere"):
        response = httpx.post(served.url + path, content=b"{not json")
        assert response.status_code == 401 and response.json() == {"error": "unauthorized"}
    odd = httpx.get(
        served.url + "/v1/health", headers={"Authorization": "Bearer \xe9t\xe9".encode()}
    )
    assert odd.status_code == 401
    assert served.client().health()["status"] == "ok"


def test_the_openapi_schema_names_the_stable_routes_and_which_one_streams(served):
    schema = httpx.get(
        served.url + "/v1/openapi.json", headers={"Authorization": f"Bearer {served.token}"}
    ).json()
    paths = schema["paths"]
    assert {"post", "get"} <= set(paths["/v1/sessions"])
    assert "post" in paths["/v1/sessions/{session_id}/messages"]
    events = paths["/v1/sessions/{session_id}/events"]["get"]
    assert "text/event-stream" in events["responses"]["200"]["content"]
    streaming = [
        p for p, ops in paths.items() for op in ops.values()
        if "text/event-stream" in op.get("responses", {}).get("200", {}).get("content", {})
    ]  # fmt: skip
    assert streaming == ["/v1/sessions/{session_id}/events"]


def test_a_task_runs_to_verified_and_streams_the_same_objects_as_run_json(
    served, fake_openai, tmp_path
):
    ws = calc_workspace(tmp_path)
    _fix_script(fake_openai)
    with served.client() as client:
        session = client.create_session(
            str(ws), model="m", base_url=fake_openai.base_url, verify=f"{sys.executable} check.py"
        )
        raw = httpx.post(
            f"{served.url}/v1/sessions/{session.id}/messages",
            headers={"Authorization": f"Bearer {served.token}"},
            json={"text": "fix add"},
        )
        assert raw.status_code == 202
        events = list(client.events(session.id, until="run_finished"))
        assert [e.id for e in events] == list(range(1, len(events) + 1))
        types = [e.type for e in events]
        assert types[0] == "run_started" and types[-1] == "run_finished"
        assert {"tool_started", "tool_finished", "verify_finished"} <= set(types)
        assert events[-1].data["status"] == "verified"
        assert client.session(session.id).status == "idle"
        assert client.session(session.id).raw["last_run"]["status"] == "verified"
    assert "a + b" in (ws / "calc.py").read_text()


def test_a_follow_up_keeps_the_caveat_of_the_check_files_changed_before(
    served, fake_openai, tmp_path
):
    # Each message's run judged the check files as it found them: after a run that
    # weakened check.py, the next message ended in a plain "verified".
    ws = calc_workspace(tmp_path)
    subprocess.run(["git", "init", "-q", str(ws)], check=True)
    weaken = Call("edit", {"path": "check.py", "old_string": "== 5", "new_string": "== -1"})
    fake_openai.enqueue(Reply(calls=[weaken]), Reply("Done."), Reply("Yes, done."))
    with served.client() as client:
        session = client.create_session(
            str(ws), model="m", base_url=fake_openai.base_url, approval="full",
            verify=f"{sys.executable} check.py",
        )  # fmt: skip
        client.send(session.id, "fix add")
        *_, first = client.events(session.id, until="run_finished")
        assert "check.py" in first.data["reason"]
        client.send(session.id, "are you sure?")
        *_, again = client.events(session.id, after=first.id, until="run_finished")
    assert again.data["status"] == "verified"
    assert "check.py" in again.data["reason"]


def test_a_client_that_reconnects_with_last_event_id_misses_nothing(served, fake_openai, tmp_path):
    ws = calc_workspace(tmp_path)
    _fix_script(fake_openai)
    with served.client() as client:
        session = client.create_session(str(ws), model="m", base_url=fake_openai.base_url)
        client.send(session.id, "fix add")
        whole = list(client.events(session.id, until="run_finished"))
        cut = len(whole) // 2
        response = httpx.get(
            f"{served.url}/v1/sessions/{session.id}/events",
            headers={"Authorization": f"Bearer {served.token}",
                     "Last-Event-ID": str(whole[cut - 1].id)},
            params={"follow": "false"},
        )  # fmt: skip
        ids = [int(line[3:]) for line in response.text.splitlines() if line.startswith("id:")]
        data = [json.loads(line[5:]) for line in response.text.splitlines()
                if line.startswith("data:")]  # fmt: skip
    assert ids == [e.id for e in whole[cut:]]
    assert data == [e.data for e in whole[cut:]]


def test_unknown_sessions_and_approvals_are_404_and_bad_bodies_say_what_is_wrong(
    served, fake_openai, tmp_path
):
    ws = calc_workspace(tmp_path)
    with served.client() as client:
        with pytest.raises(ServiceError) as missing:
            client.session("0123456789ab")
        assert missing.value.status == 404
        session = client.create_session(str(ws), model="m", base_url=fake_openai.base_url)
        with pytest.raises(ServiceError) as unknown:
            client.answer(session.id, "deadbeef", "once")
        assert unknown.value.status == 404
        assert "no pending approval deadbeef" in str(unknown.value)
        with pytest.raises(ServiceError) as bad:
            client.create_session(str(tmp_path / "nowhere"), model="m")
        assert bad.value.status == 400 and "not a directory" in str(bad.value)
        with pytest.raises(ServiceError) as shape:
            client.create_session(str(ws), approval="sometimes")
        assert shape.value.status == 422 and "approval" in str(shape.value)


def test_a_workspace_path_too_long_for_the_system_is_a_400(served, tmp_path):
    # The server answered 500 with a traceback: is_dir() raised ENAMETOOLONG.
    with served.client() as client:
        for odd in ("/tmp/" + "x" * 300, "/tmp/a\x00b"):
            with pytest.raises(ServiceError) as refused:
                client.create_session(odd, model="m")
            assert refused.value.status == 400, refused.value
            assert "workspace" in str(refused.value)
    assert "Traceback" not in served.stop()


def test_the_client_sends_an_id_as_one_path_segment(served, fake_openai, tmp_path):
    # `answer(sid, "../abort", ...)` aborted the session's run, `session("../health")`
    # raised KeyError and `session("")` a JSONDecodeError: ids went into paths as they were.
    ws = calc_workspace(tmp_path)
    fake_openai.enqueue(Hang(30))
    with served.client() as client:
        session = client.create_session(str(ws), model="m", base_url=fake_openai.base_url)
        client.send(session.id, "fix add")
        with pytest.raises(ServiceError) as sneaky:
            client.answer(session.id, "../abort", "once")
        assert sneaky.value.status == 404
        assert client.session(session.id).status == "running"
        for odd in ("../health", "", "..", "a/b", "?x=1"):
            with pytest.raises(ServiceError) as refused:
                client.session(odd)
            assert refused.value.status in (400, 404), odd
        client.abort(session.id)


def test_an_edit_waits_for_approval_and_runs_once_approved(served, fake_openai, tmp_path):
    ws = calc_workspace(tmp_path)
    _fix_script(fake_openai)
    with served.client() as client:
        session = client.create_session(
            str(ws), model="m", base_url=fake_openai.base_url, approval="ask"
        )
        client.send(session.id, "fix add")
        *_, event = client.events(session.id, until="approval_requested")
        assert event.data["tool"] == "edit"
        assert "+    return a + b" in event.data["preview"]  # the diff the person approves
        assert client.session(session.id).status == "waiting_approval"
        [pending] = client.approvals(session.id)
        assert pending["id"] == event.data["approval_id"]
        assert "a - b" in (ws / "calc.py").read_text()
        client.answer(session.id, pending["id"], "once")
        rest = list(client.events(session.id, after=event.id, until="run_finished"))
        assert client.approvals(session.id) == []
    assert rest[0].type == "approval_resolved"
    assert rest[-1].data["status"] == "unverified"
    assert "a + b" in (ws / "calc.py").read_text()


def test_a_denied_approval_tells_the_model_why(served, fake_openai, tmp_path):
    ws = calc_workspace(tmp_path)
    _fix_script(fake_openai)
    with served.client() as client:
        session = client.create_session(
            str(ws), model="m", base_url=fake_openai.base_url, approval="ask"
        )
        client.send(session.id, "fix add")
        *_, event = client.events(session.id, until="approval_requested")
        client.answer(session.id, event.data["approval_id"], "deny", "not that file")
        finished = list(client.events(session.id, after=event.id, until="run_finished"))
    [result] = [e for e in finished if e.type == "tool_finished"]
    assert result.data["is_error"] and "not that file" in result.data["output"]
    assert "a - b" in (ws / "calc.py").read_text()


def test_an_unattended_session_denies_an_approval_nobody_answers(served, fake_openai, tmp_path):
    ws = calc_workspace(tmp_path)
    _fix_script(fake_openai)
    with served.client() as client:
        session = client.create_session(
            str(ws), model="m", base_url=fake_openai.base_url, approval="ask",
            approval_timeout_s=0.5,
        )  # fmt: skip
        client.send(session.id, "fix add")
        events = list(client.events(session.id, until="run_finished"))
    [resolved] = [e for e in events if e.type == "approval_resolved"]
    assert resolved.data["choice"] == "deny" and resolved.data["by"] == "timeout"
    assert "a - b" in (ws / "calc.py").read_text()
    # It had read "denied_by": "user", and the model "the user denied this edit call".
    [result] = [e for e in events if e.type == "tool_finished"]
    assert result.data["details"]["denied_by"] == "timeout"
    assert "the user denied" not in result.data["output"]
    assert "nobody answered" in result.data["output"]


def test_a_token_file_is_used_when_present_and_created_private_when_not(tmp_path):
    given = tmp_path / "given-token"
    given.write_text("my-own-token\n")
    with ServeProcess(tmp_path / "home", "--token-file", str(given)) as server:
        response = httpx.get(server.url + "/v1/health",
                             headers={"Authorization": "Bearer my-own-token"})  # fmt: skip
        assert response.status_code == 200
    created = tmp_path / "new-token"
    with ServeProcess(tmp_path / "home2", "--token-file", str(created)) as server:
        assert stat.S_IMODE(os.stat(created).st_mode) == 0o600
        token = created.read_text().strip()
        headers = {"Authorization": f"Bearer {token}"}
        assert httpx.get(server.url + "/v1/health", headers=headers).status_code == 200
        err = server.stop()
    assert token in err  # printed once, when it was made


@pytest.mark.parametrize("host", ["0.0.0.0", "127.attacker.example", "nosuchhost.invalid"])
def test_a_non_loopback_address_needs_allow_remote(tmp_path, host):
    env = {**os.environ, "LATHE_HOME": str(tmp_path / "home")}
    result = subprocess.run(
        [sys.executable, "-m", "lathe", "serve", "--host", host, "--port", "0"],
        env=env, capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL,
    )  # fmt: skip
    assert result.returncode == 2
    [line] = result.stderr.splitlines()
    # Offline, the name resolves nowhere: refused either way, never bound.
    assert line.startswith(f"lathe: --host {host}")
    assert "--allow-remote" in line or "no such host" in line
    assert not (tmp_path / "home" / "serve" / "token").exists()


@pytest.mark.parametrize(
    "url",
    [
        "https://collector.example/v1",
        # A name that merely starts like a loopback address resolves wherever its
        # owner likes: it was taken for this machine.
        "http://127.attacker.example/v1",
        "http://localhost.attacker.example/v1",
    ],
)
def test_a_base_url_off_this_machine_is_refused_since_requests_carry_the_servers_key(
    served, tmp_path, url
):
    ws = calc_workspace(tmp_path)
    with served.client() as client, pytest.raises(ServiceError) as refused:
        client.create_session(str(ws), model="m", base_url=url)
    assert refused.value.status == 400 and "server's key" in str(refused.value)
    assert list((served.home / "sessions").rglob("*.jsonl")) == []


@pytest.mark.parametrize("where", ["around", "serve", "inside"])
def test_a_workspace_holding_or_inside_the_servers_data_is_refused(served, tmp_path, where):
    # An agent working there could read the server's token and rewrite the records a
    # restarted server trusts (the commands and endpoints of every session); inside it,
    # `read token` in $LATHE_HOME/serve handed the token to the model.
    folder = {"around": tmp_path, "serve": served.home / "serve",
              "inside": served.home / "elsewhere"}[where]  # fmt: skip
    folder.mkdir(parents=True, exist_ok=True)
    with served.client() as client, pytest.raises(ServiceError) as refused:
        client.create_session(str(folder), model="m", base_url="http://127.0.0.1:9/v1")
    assert refused.value.status == 400
    assert str(served.home) in str(refused.value) and "token" in str(refused.value)


def test_a_workspace_spelled_with_a_tilde_is_refused_as_relative(served):
    # `~` was the server's home, whoever the client was.
    with served.client() as client, pytest.raises(ServiceError) as refused:
        client.create_session("~", model="m", base_url="http://127.0.0.1:9/v1")
    assert refused.value.status == 400 and "not an absolute path" in str(refused.value)


def test_a_request_body_over_the_limit_is_413_and_the_server_goes_on(served, tmp_path):
    headers = {"Authorization": f"Bearer {served.token}", "Content-Type": "application/json"}
    huge = b'{"workspace": "' + b"x" * (MAX_BODY_BYTES + 1) + b'"}'
    told = httpx.post(served.url + "/v1/sessions", content=huge, headers=headers)
    assert told.status_code == 413 and "bytes" in told.json()["error"]

    def chunks():  # no Content-Length: counted as it comes
        for _ in range(MAX_BODY_BYTES // 65536 + 2):
            yield b"x" * 65536

    streamed = httpx.post(served.url + "/v1/sessions", content=chunks(), headers=headers)
    assert streamed.status_code == 413
    assert served.client().health()["status"] == "ok"


def test_a_second_server_on_the_same_data_folder_is_refused(served, tmp_path):
    # Both would restore and run the same sessions, and each accept the same workspace.
    env = {k: v for k, v in os.environ.items() if not k.startswith(("LATHE_", "OPENAI_"))}
    env["LATHE_HOME"] = str(served.home)
    second = subprocess.run(
        [sys.executable, "-m", "lathe", "serve", "--port", "0"],
        env=env, capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL,
    )  # fmt: skip
    assert second.returncode == 2
    [line] = second.stderr.splitlines()
    assert line.startswith("lathe: another `lathe serve` ")
    assert f"pid {served.process.pid}" in line and "LATHE_HOME" in line
    assert second.stdout == ""  # never announced a URL
    with served.client() as client:  # the first one goes on serving
        assert client.health()["status"] == "ok"


def test_the_client_reads_a_reply_holding_unicode_line_separators(served, fake_openai, tmp_path):
    # `events()` split a JSON event at U+2028 and failed on it again on every resume.
    ws = calc_workspace(tmp_path)
    fake_openai.enqueue(Reply("line one\u2028line two"))
    with served.client() as client:
        session = client.create_session(str(ws), model="m", base_url=fake_openai.base_url)
        client.send(session.id, "say two lines")
        events = list(client.events(session.id, until="run_finished"))
    [reply] = [e for e in events if e.type == "assistant_reply"]
    assert reply.data["message"]["text"] == "line one\u2028line two"


def test_an_aborted_run_ends_every_call_it_announced_in_the_stream(served, fake_openai, tmp_path):
    # The stream went tool_started(a) -> run_finished: `a` never ended there, and `b`
    # never appeared, while the conversation held "interrupted" results for both.
    ws = calc_workspace(tmp_path)
    fake_openai.enqueue(
        Reply(calls=[Call("bash", {"command": "sleep 30"}, id="a"),
                     Call("bash", {"command": "echo later"}, id="b")])
    )  # fmt: skip
    with served.client() as client:
        session = client.create_session(
            str(ws), model="m", base_url=fake_openai.base_url, approval="full"
        )
        client.send(session.id, "wait a while")
        events = []
        for event in client.events(session.id, until="run_finished"):
            events.append(event)
            if event.type == "tool_started":
                client.abort(session.id)
    started = [e.data["call_id"] for e in events if e.type == "tool_started"]
    finished = [e.data["call_id"] for e in events if e.type == "tool_finished"]
    assert sorted(started) == sorted(finished) == ["a", "b"]
    assert events[-1].data["status"] == "interrupted"


def test_text_holding_a_lone_surrogate_is_a_422_and_creates_nothing(served, tmp_path):
    # A plain-text 500 that had created the session anyway: from then on every
    # GET /v1/sessions was a 500 too, until a restart listed it as unreadable.
    ws = calc_workspace(tmp_path)
    headers = {"Authorization": f"Bearer {served.token}", "Content-Type": "application/json"}
    bodies = [
        f'{{"workspace": "{ws}", "verify": "echo \\ud800"}}',
        '{"workspace": "/tmp/\\udc80x"}',
        f'{{"workspace": "{ws}", "model": "m\\udfff"}}',
    ]
    for body in bodies:
        told = httpx.post(served.url + "/v1/sessions", content=body.encode(), headers=headers)
        assert told.status_code == 422, told.text
        assert "lone surrogate" in told.json()["error"]
    listed = httpx.get(served.url + "/v1/sessions", headers=headers)
    assert listed.status_code == 200 and listed.json()["sessions"] == []
    # A pair of escapes that makes one character is text like any other.
    emoji = f'{{"workspace": "{ws}", "verify": "echo \\ud83d\\ude00"}}'
    made = httpx.post(served.url + "/v1/sessions", content=emoji.encode(), headers=headers)
    assert made.status_code == 201, made.text


def test_a_body_that_is_not_json_says_how_to_send_it(served, tmp_path):
    ws = calc_workspace(tmp_path)
    token = {"Authorization": f"Bearer {served.token}"}
    plain = httpx.post(
        served.url + "/v1/sessions", content=json.dumps({"workspace": str(ws)}), headers=token
    )
    assert plain.status_code == 422
    assert "Content-Type: application/json" in plain.json()["error"]
    broken = httpx.post(
        served.url + "/v1/sessions",
        content=f'{{"workspace": "{ws}",}}',
        headers={**token, "Content-Type": "application/json"},
    )
    assert broken.status_code == 422
    error = broken.json()["error"]
    assert error.startswith("bad request: the body is not valid JSON") and "character" in error


def test_an_approval_timeout_must_be_a_finite_number(served, tmp_path):
    ws = calc_workspace(tmp_path)
    headers = {"Authorization": f"Bearer {served.token}", "Content-Type": "application/json"}
    body = f'{{"workspace": "{ws}", "approval_timeout_s": 1e999}}'
    told = httpx.post(served.url + "/v1/sessions", content=body, headers=headers)
    assert told.status_code == 422 and "approval_timeout_s" in told.json()["error"]


def test_tokens_are_counted_alike_in_a_session_its_run_end_and_the_metrics(
    served, fake_openai, tmp_path
):
    # The run's end counted cached tokens (as --max-tokens does) and the session's row
    # and /v1/metrics did not: 101,000 tokens in one place, 11,000 in the other.
    usage = {"prompt_tokens": 100_000, "completion_tokens": 1_000, "total_tokens": 101_000,
             "prompt_tokens_details": {"cached_tokens": 90_000}}  # fmt: skip
    fake_openai.enqueue(Reply("Done.", usage=usage))
    with served.client() as client:
        session = client.create_session(
            str(calc_workspace(tmp_path)), model="m", base_url=fake_openai.base_url
        )
        client.send(session.id, "look around")
        *_, end = client.events(session.id, until="run_finished")
        counted = client.session(session.id).raw["usage"]
        headers = {"Authorization": f"Bearer {served.token}"}
        metrics = httpx.get(served.url + "/v1/metrics", headers=headers).json()
        transcript = httpx.get(
            f"{served.url}/v1/sessions/{session.id}/transcript", headers=headers
        ).json()["text"]
    assert sum(end.data["usage"].values()) == 101_000
    assert counted["total_tokens"] == 101_000
    assert counted["cache_read_tokens"] == 90_000
    assert metrics["tokens"] == 101_000
    assert "101,000 tokens" in transcript, transcript  # the run's end, as the record says it


def test_a_blank_verify_command_is_a_422_naming_verify(served, tmp_path):
    # It reached `lathe run`'s check and came back as "--verify: empty command", naming a
    # flag the client never used.
    headers = {"Authorization": f"Bearer {served.token}"}
    ws = calc_workspace(tmp_path)
    for blank in ("", "   "):
        body = {"workspace": str(ws), "verify": blank}
        told = httpx.post(served.url + "/v1/sessions", json=body, headers=headers)
        assert told.status_code == 422, told.text
        assert told.json()["error"].startswith("bad request: verify:"), told.text
