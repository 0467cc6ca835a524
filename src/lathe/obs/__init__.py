"""Observability: the per-session structured log, secret masking, stats over the logs,
and optional OpenTelemetry spans. All of it consumes the agent's events; nothing here
changes what the agent does, except `Redactor.after_tool`, which masks secrets in tool
output before anyone sees it.

A face wires it in front of its own event consumer::

    redactor = Redactor(setup.model.secrets())
    observer = Observer(session.path, session.id, redactor, face_emit)
    ...  # the agent emits into `observer`; hooks include `redactor` and
    ...  # `redactor.guard(recorder)`
    observer.close()
"""

from __future__ import annotations

from pathlib import Path

from lathe.events import AgentEvent
from lathe.obs.log import SessionLog, log_path
from lathe.obs.redact import Redactor


class Observer:
    """An emit function: masks each event, writes it to the session log and to
    OpenTelemetry when enabled, then hands it to the face."""

    def __init__(self, session_path: Path, session_id: str, redactor: Redactor, face) -> None:
        from lathe.obs.otel import start_tracing

        self.redactor = redactor
        self.log = SessionLog(log_path(session_path), session_id, redactor)
        self.tracing = start_tracing(redactor)
        self._face = face
        self._masked = redactor.streamed()

    def __call__(self, event: AgentEvent) -> None:
        for masked in self._masked(event):
            self.log(masked)
            if self.tracing is not None:
                self.tracing(masked)
            self._face(masked)

    def record_interrupt(self, reason: str) -> None:
        for held in self._masked.flush():  # a reply's end, held back as a secret's start
            self._face(held)
        self.log.record_interrupt(reason)

    def close(self) -> None:
        self.log.close()
        if self.tracing is not None:
            self.tracing.close()


__all__ = ["Observer", "Redactor", "SessionLog", "log_path"]
