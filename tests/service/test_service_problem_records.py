"""Records a restarted server could not serve again (`problems` in `GET /v1/sessions`):
what they say, how a client removes or resumes them, and the workspace rule holding for
them and for every session a restart brings back."""

from __future__ import annotations

import json
import shutil

import pytest
from tests.fakes.openai_server import Hang
from tests.service.scripts import workspace_for
from tests.service.server import ServeProcess

from lathe.client import ServiceError


def _listed(client):
    return client._call("GET", "/v1/sessions")


def test_a_problem_record_says_what_to_do_and_delete_drops_it(tmp_path, fake_openai):
    # It said "pass an existing one with -C" (the CLI's words), DELETE was a 404, and
    # every later start warned about it again, for ever.
    home = tmp_path / "home"
    ws = workspace_for(tmp_path, "gone")
    with ServeProcess(home) as server, server.client() as client:
        lost = client.create_session(str(ws), model="m", base_url=fake_openai.base_url)
    shutil.rmtree(ws)
    with ServeProcess(home) as again, again.client() as client:
        [problem] = _listed(client)["problems"]
        dropped = client.delete(lost.id)
        after = _listed(client)
    assert lost.id in problem and str(ws) in problem
    assert f"POST /v1/sessions/{lost.id}/resume" in problem
    assert f"DELETE /v1/sessions/{lost.id}" in problem and "-C" not in problem
    assert dropped["id"] == lost.id and dropped["status"] == "stopped"
    assert after == {"sessions": [], "problems": []}
    third = ServeProcess(home).start()
    with third.client() as client:
        assert _listed(client)["problems"] == []
    assert "could not be restored" not in third.stop()


def test_a_problem_resumed_once_its_workspace_is_back_is_no_longer_a_problem(tmp_path, fake_openai):
    # It stayed listed under problems while served, and its `created` became the time
    # of the resume.
    home = tmp_path / "home"
    ws = workspace_for(tmp_path, "away")
    with ServeProcess(home) as server, server.client() as client:
        lost = client.create_session(str(ws), model="m", base_url=fake_openai.base_url)
    ws.rename(tmp_path / "moved")
    with ServeProcess(home) as again, again.client() as client:
        assert len(_listed(client)["problems"]) == 1
        (tmp_path / "moved").rename(ws)
        resumed = client.resume(lost.id)
        listed = _listed(client)
    assert listed["problems"] == []
    assert [s["id"] for s in listed["sessions"]] == [lost.id]
    assert resumed.raw["created"] == lost.raw["created"]
    record = json.loads((home / "serve" / "sessions" / f"{lost.id}.json").read_text())
    assert record["created"] == lost.raw["created"]


def test_a_workspace_a_problem_record_holds_is_refused_to_a_new_session(tmp_path, fake_openai):
    # A second session was made there; the next start served both on one workspace,
    # and the server's own runs locked each other out.
    home = tmp_path / "home"
    ws = workspace_for(tmp_path, "shared")
    with ServeProcess(home) as server, server.client() as client:
        first = client.create_session(str(ws), model="m", base_url=fake_openai.base_url)
    ws.rename(tmp_path / "moved")
    with ServeProcess(home) as again, again.client() as client:
        assert len(_listed(client)["problems"]) == 1  # the start is over
        (tmp_path / "moved").rename(ws)
        with pytest.raises(ServiceError) as refused:
            client.create_session(str(ws), model="m", base_url=fake_openai.base_url)
        client.delete(first.id)
        second = client.create_session(str(ws), model="m", base_url=fake_openai.base_url)
    assert refused.value.status == 409, refused.value
    assert first.id in str(refused.value) and "DELETE" in str(refused.value)
    assert second.id != first.id


def test_sessions_a_restart_finds_on_one_workspace_are_served_one_at_a_time(tmp_path, fake_openai):
    # Two records whose workspaces have become one folder (a link swapped in): both
    # were served, and a message to one failed while the other ran, blaming "another
    # lathe serve" that was this very server.
    home = tmp_path / "home"
    one, two = workspace_for(tmp_path, "one"), workspace_for(tmp_path, "two")
    with ServeProcess(home) as server, server.client() as client:
        first = client.create_session(str(one), model="m", base_url=fake_openai.base_url)
        second = client.create_session(str(two), model="m", base_url=fake_openai.base_url)
    shutil.rmtree(two)
    two.symlink_to(one)
    with ServeProcess(home) as again, again.client() as client:
        listed = _listed(client)
    assert [s["id"] for s in listed["sessions"]] == [first.id]  # the older one
    [problem] = listed["problems"]
    assert second.id in problem and first.id in problem and "overlaps" in problem
    assert f"DELETE /v1/sessions/{second.id}" in problem


def test_a_run_a_served_session_blocks_is_told_which_session(
    served, fake_openai, tmp_path, monkeypatch
):
    from lathe.workspace_lock import WorkspaceBusy, hold_workspace

    fake_openai.enqueue(Hang(30))
    ws = workspace_for(tmp_path, "busy")
    with served.client() as client:
        session = client.create_session(str(ws), model="m", base_url=fake_openai.base_url)
        client.send(session.id, "a long task")
        list(client.events(session.id, until="turn_started"))
        monkeypatch.setenv("LATHE_HOME", str(served.home))
        with pytest.raises(WorkspaceBusy) as busy, hold_workspace(ws, doing="x", when_busy=""):
            pass
        client.abort(session.id)
    assert f"lathe serve session {session.id}" in str(busy.value)
