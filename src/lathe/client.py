"""A small typed client for `lathe serve` (httpx), used by the tests, the bench,
`lathe attach` and anyone embedding lathe.

    with LatheClient("http://127.0.0.1:8765", token) as client:
        session = client.create_session(workspace="/src/app", verify="pytest -q")
        client.send(session.id, "make the failing test pass")
        for event in client.events(session.id, until="run_finished"):
            print(event.type)

An error answer raises `ServiceError` with the server's one-line message and status.
`events` reconnects with `Last-Event-ID` when the stream drops, so nothing is missed.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import httpx

from lathe.errors import LatheError


class ServiceError(LatheError):
    def __init__(self, status: int, message: str) -> None:
        super().__init__(f"{message} (HTTP {status})")
        self.status = status


@dataclass(frozen=True)
class SessionInfo:
    id: str
    status: str
    workspace: str
    model: str
    raw: dict[str, Any]

    @classmethod
    def of(cls, data: dict[str, Any]) -> SessionInfo:
        return cls(data["id"], data["status"], data["workspace"], data["model"], data)


@dataclass(frozen=True)
class StreamedEvent:
    """One event of a session's stream: its number and the event object."""

    id: int
    data: dict[str, Any]

    @property
    def type(self) -> str:
        return str(self.data.get("type", ""))


class LatheClient:
    """The service's API as methods; every error answer raises `ServiceError`."""

    def __init__(self, url: str, token: str, *, timeout: float = 30.0) -> None:
        self.url = url.rstrip("/")
        self._http = httpx.Client(
            base_url=self.url,
            headers={"Authorization": f"Bearer {token}"},
            timeout=timeout,
        )

    def __enter__(self) -> LatheClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        self._http.close()

    # sessions

    def create_session(self, workspace: str, **options: Any) -> SessionInfo:
        body = {"workspace": workspace, **{k: v for k, v in options.items() if v is not None}}
        return SessionInfo.of(self._call("POST", "/v1/sessions", json=body))

    def sessions(self) -> list[SessionInfo]:
        return [SessionInfo.of(s) for s in self._call("GET", "/v1/sessions")["sessions"]]

    def session(self, session_id: str) -> SessionInfo:
        return SessionInfo.of(self._call("GET", f"/v1/sessions/{_segment(session_id)}"))

    def delete(self, session_id: str) -> dict[str, Any]:
        return self._call("DELETE", f"/v1/sessions/{_segment(session_id)}")

    def send(self, session_id: str, text: str) -> bool:
        """Post a message; whether it was queued behind a running turn."""
        answer = self._call(
            "POST", f"/v1/sessions/{_segment(session_id)}/messages", json={"text": text}
        )
        return bool(answer["queued"])

    def abort(self, session_id: str) -> bool:
        return bool(self._call("POST", f"/v1/sessions/{_segment(session_id)}/abort")["aborted"])

    def fork(self, session_id: str) -> SessionInfo:
        return SessionInfo.of(self._call("POST", f"/v1/sessions/{_segment(session_id)}/fork"))

    def resume(self, session_id: str, **changes: Any) -> SessionInfo:
        body = {k: v for k, v in changes.items() if v is not None}
        return SessionInfo.of(
            self._call("POST", f"/v1/sessions/{_segment(session_id)}/resume", json=body)
        )

    def transcript(self, session_id: str) -> str:
        return str(self._call("GET", f"/v1/sessions/{_segment(session_id)}/transcript")["text"])

    # approvals

    def approvals(self, session_id: str) -> list[dict[str, Any]]:
        return list(
            self._call("GET", f"/v1/sessions/{_segment(session_id)}/approvals")["approvals"]
        )

    def answer(self, session_id: str, approval_id: str, choice: str, reason: str = "") -> None:
        self._call(
            "POST",
            f"/v1/sessions/{_segment(session_id)}/approvals/{_segment(approval_id)}",
            json={"choice": choice, "reason": reason},
        )

    # server

    def health(self) -> dict[str, Any]:
        return self._call("GET", "/v1/health")

    def metrics(self) -> dict[str, Any]:
        return self._call("GET", "/v1/metrics")

    # events

    def events(
        self,
        session_id: str,
        *,
        after: int = 0,
        until: str | None = None,
        follow: bool = True,
        reconnects: int = 5,
    ) -> Iterator[StreamedEvent]:
        """The session's events after `after`: first those it already had, then live
        ones. Stops after an event of type `until` (e.g. "run_finished"), or, without
        `follow`, once the stored ones are read. A dropped stream is resumed from the
        last event received, at most `reconnects` times in a row."""
        last, failures = after, 0
        while True:
            try:
                for event in self._stream(session_id, last, follow):
                    last, failures = event.id, 0
                    yield event
                    if until is not None and event.type == until:
                        return
                if not follow:
                    return
                # The server ended the stream (it restarted, or this reader lagged too
                # far behind): pick up after `last`, as after a dropped connection.
                failures += 1
                if failures > reconnects:
                    return
            except httpx.TransportError:  # a dropped or silent stream: pick up after `last`
                failures += 1
                if failures > reconnects:
                    raise
            time.sleep(min(0.25 * 2**failures, 5.0))

    def _stream(self, session_id: str, after: int, follow: bool) -> Iterator[StreamedEvent]:
        headers = {"Last-Event-ID": str(after)} if after else {}
        params = {} if follow else {"follow": "false"}
        with self._http.stream(
            "GET", f"/v1/sessions/{_segment(session_id)}/events", headers=headers, params=params,
            # The server pings every 15 s: a minute of silence is a dead stream.
            timeout=httpx.Timeout(self._http.timeout.connect, read=60.0),
        ) as response:  # fmt: skip
            if response.status_code != 200:
                response.read()
                raise ServiceError(response.status_code, _message(response))
            number: int | None = None
            data: list[str] = []
            for line in response.iter_lines():
                if line.startswith("id:"):
                    number = int(line[3:].strip())
                elif line.startswith("data:"):
                    data.append(line[5:].removeprefix(" "))
                elif not line and data:
                    if number is not None:
                        yield StreamedEvent(number, json.loads("\n".join(data)))
                    number, data = None, []

    def _call(self, method: str, path: str, **kwargs: Any) -> Any:
        response = self._http.request(method, path, **kwargs)
        if response.status_code >= 400:
            raise ServiceError(response.status_code, _message(response))
        try:
            return response.json()
        except ValueError:
            raise ServiceError(
                response.status_code,
                f"the answer to {method} {path} is not JSON: is this lathe serve?",
            ) from None


def _segment(identifier: str) -> str:
    """An id as one path segment: "../abort" must not name another route."""
    from urllib.parse import quote

    if identifier in ("", ".", ".."):
        raise ServiceError(400, f"{identifier!r} is not an id")
    return quote(identifier, safe="")


def _message(response: httpx.Response) -> str:
    try:
        return str(response.json().get("error") or response.text)
    except ValueError:
        return response.text.strip() or response.reason_phrase
