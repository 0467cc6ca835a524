"""50 sessions of 20 turns each at once behind one server: every session gets all of
its own events, in order, once, and none of another's."""

from __future__ import annotations

import re
from concurrent.futures import ThreadPoolExecutor

from tests.service.scripts import by_marker, long_run, workspace_for

SESSIONS = 50
TURNS = 20
_MARKER = re.compile(r"sess\d\dx")


def test_fifty_sessions_of_twenty_turns_lose_nothing_and_never_cross(served, fake_openai, tmp_path):
    markers = [f"sess{n:02d}x" for n in range(SESSIONS)]
    fake_openai.responder = by_marker({m: long_run(m, TURNS) for m in markers})
    with served.client() as client:
        ids = {
            m: client.create_session(
                str(workspace_for(tmp_path, m)), model="m", base_url=fake_openai.base_url,
                max_turns=TURNS + 5,
            ).id
            for m in markers
        }  # fmt: skip

    def follow(marker: str) -> list:
        with served.client() as own:
            own.send(ids[marker], f"task {marker}: read your file")
            return list(own.events(ids[marker], until="run_finished"))

    with ThreadPoolExecutor(SESSIONS) as pool:
        runs = dict(zip(markers, pool.map(follow, markers), strict=True))

    with served.client() as client:
        for marker, events in runs.items():
            assert [e.id for e in events] == list(range(1, len(events) + 1)), marker
            assert client.session(ids[marker]).raw["last_event_id"] == len(events)
            assert events[0].data["session_id"] == ids[marker]
            assert events[-1].data["status"] == "unverified", events[-1].data
            assert events[-1].data["turns"] == TURNS
            seen = set(_MARKER.findall("\n".join(str(e.data) for e in events)))
            assert seen == {marker}, f"{marker} saw {seen - {marker}}"
            outputs = [e.data["output"] for e in events if e.type == "tool_finished"]
            assert len(outputs) == TURNS - 1
            assert any(f"{marker}-ran" in output for output in outputs)
        assert client.metrics()["sessions"] == SESSIONS
