"""The structured log of a session: one JSON object a line, next to the session file.

`<ts>_<id>.jsonl` (the session) gets a sibling `<ts>_<id>.log`. It is not named
`.jsonl` on purpose: the session store treats every `*.jsonl` in a project directory as
a session. `SessionLog` is an event consumer (attach it to the emit chain of any face);
every line goes through a `Redactor` before it is written. Each line has `ts` (ISO 8601,
UTC), `session` and `kind`:

- `run_start`: task (clipped), model, workspace.
- `model_request`: turn, model, parameters (request options, never a key or header),
  latency_ms, first_token_ms, retries, usage, stop_reason, cost_usd (null: unpriced).
- `tool_call`: call_id, name, args (a summary: long strings clipped, file contents
  replaced by their length), duration_ms, ok, exit_code (commands), error (failures).
- `retry`, `compaction`, `verify`, `notice`: as their events.
- `run_end`: status, turns, usage, cost_usd, reason, duration_ms, requests,
  tool_calls, tool_errors. An interrupted run gets one from `record_interrupt`.

Appends are flushed per line but not fsynced: the session file is the durable record;
this one is for accounting and diagnosis, and a lost last line costs nothing.
"""

from __future__ import annotations

import dataclasses
import json
import os
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from lathe.events import (
    AgentEvent,
    Compacted,
    ModelRequestFinished,
    Notice,
    Retrying,
    RunFinished,
    RunStarted,
    ToolFinished,
    ToolStarted,
    VerifyFinished,
)
from lathe.obs.redact import Redactor

LOG_SUFFIX = ".log"
FORMAT_VERSION = 1
_CONTENT_ARGS = frozenset({"content", "old_string", "new_string"})
_ARG_CHARS = 200
_TASK_CHARS = 500


def log_path(session_path: Path) -> Path:
    """`<ts>_<id>.jsonl` → `<ts>_<id>.log`."""
    return session_path.with_suffix(LOG_SUFFIX)


def summarize_arguments(arguments: dict[str, Any]) -> dict[str, Any]:
    """Tool arguments fit for a log: file contents become their length, long values are
    clipped, so a log never holds a copy of the user's files."""
    summary: dict[str, Any] = {}
    for key, value in arguments.items():
        if key in _CONTENT_ARGS and isinstance(value, str):
            summary[key] = f"<{len(value)} chars>"
        elif isinstance(value, str):
            summary[key] = _clip(value, _ARG_CHARS)
        elif value is None or isinstance(value, bool | int | float):
            summary[key] = value
        else:
            summary[key] = _clip(json.dumps(value, default=str), _ARG_CHARS)
    return summary


class SessionLog:
    """Writes the log lines for one session's events. Never raises into the agent: a log
    that cannot be written is given up after the first failure (`self.error` says why)."""

    def __init__(self, path: Path, session_id: str, redactor: Redactor | None = None) -> None:
        self.path = path
        self.session_id = session_id
        self.error: str | None = None
        self._redactor = redactor or Redactor(())
        self._fd: int | None = None
        self._tools: dict[str, dict[str, Any]] = {}
        self._reset_run()

    def _reset_run(self) -> None:
        self._run_started = time.monotonic()
        self._requests = 0
        self._tool_calls = 0
        self._tool_errors = 0

    def __call__(self, event: AgentEvent) -> None:
        match event:
            case RunStarted(task=task, model=model, workspace=workspace):
                self._reset_run()
                self._write(
                    "run_start", task=_clip(task, _TASK_CHARS), model=model, workspace=workspace
                )
            case ModelRequestFinished():
                self._requests += 1
                record = event.model_dump(exclude={"type"})
                record["latency_ms"] = round(event.latency_ms, 1)
                if event.first_token_ms is not None:
                    record["first_token_ms"] = round(event.first_token_ms, 1)
                self._write("model_request", **record)
            case ToolStarted(call_id=call_id, arguments=arguments):
                self._tools[call_id] = summarize_arguments(arguments)
            case ToolFinished(call_id=call_id, name=name, is_error=is_error):
                self._tool_calls += 1
                self._tool_errors += is_error
                exit_code = event.details.get("exit_code")
                self._write(
                    "tool_call",
                    call_id=call_id,
                    name=name,
                    args=self._tools.pop(call_id, {}),
                    duration_ms=round(event.duration_ms, 1),
                    ok=not is_error and exit_code in (None, 0),
                    exit_code=exit_code,
                    error=_clip(event.summary, _ARG_CHARS) if is_error else None,
                    summary=_clip(event.summary, _ARG_CHARS),
                )
            case Retrying(attempt=attempt, max_attempts=total, wait_s=wait, error=error):
                self._write("retry", attempt=attempt, max_attempts=total, wait_s=wait, error=error)
            case Compacted(tokens_before=before, tokens_after=after, reason=reason):
                self._write("compaction", tokens_before=before, tokens_after=after, reason=reason)
            case VerifyFinished(command=command, exit_code=code, passed=passed):
                self._write("verify", command=command, exit_code=code, passed=passed)
            case Notice(level=level, message=message):
                self._write("notice", level=level, message=message)
            case RunFinished():
                self._write(
                    "run_end",
                    status=event.status.value,
                    turns=event.turns,
                    usage=dataclasses.asdict(event.usage),
                    cost_usd=event.cost_usd,
                    reason=event.reason,
                    **self._totals(),
                )
            case _:
                pass

    def record_interrupt(self, reason: str) -> None:
        """The run was stopped before it could finish (Ctrl-C, SIGTERM): close it in the
        log, saying which."""
        self._write("run_end", status="interrupted", reason=reason, **self._totals())

    def _totals(self) -> dict[str, Any]:
        return {
            "duration_ms": round((time.monotonic() - self._run_started) * 1000, 1),
            "requests": self._requests,
            "tool_calls": self._tool_calls,
            "tool_errors": self._tool_errors,
        }

    def _write(self, kind: str, **fields: Any) -> None:
        if self.error is not None:
            return
        record = {
            "v": FORMAT_VERSION,
            "ts": datetime.now(UTC).isoformat(timespec="milliseconds"),
            "session": self.session_id,
            "kind": kind,
            **fields,
        }
        line = self._redactor.mask(json.dumps(record, default=str, ensure_ascii=False)) + "\n"
        try:
            if self._fd is None:
                self.path.parent.mkdir(parents=True, exist_ok=True)
                self._fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
            os.write(self._fd, line.encode("utf-8", "surrogateescape"))
        except OSError as exc:
            self.error = f"cannot write the log {self.path}: {exc}"

    def close(self) -> None:
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None


def _clip(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 3] + "..."
