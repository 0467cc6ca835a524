"""The agent's event stream: every face (terminal, --json, HTTP, logs) consumes these.

Each event is a pydantic model with a `type` literal, so `event.model_dump_json()` is
the wire form of `lathe run --json` and the service's SSE stream.
"""

from __future__ import annotations

import functools
from enum import StrEnum
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter, field_validator

from lathe.errors import ErrorKind, ProviderError
from lathe.types import AssistantMessage, Usage

TOOL_OUTPUT_CHARS = 4_000
"""The most of a tool's output a `tool_finished` event carries (the session keeps all)."""

EVENTS_SCHEMA_VERSION = 4
"""The version of the schema `lathe schema events` prints: bump it whenever that schema
changes (a new event, a new or changed field); tests/test_event_schema.py holds it to that."""


class RunStatus(StrEnum):
    VERIFIED = "verified"  # the verify command passed, run by lathe itself
    UNVERIFIED = "unverified"  # the model finished; no verify command was configured
    FAILED = "failed"  # the verify command still failed when the turns ran out
    STUCK = "stuck"  # the model repeated itself after a nudge
    MAX_TURNS = "max_turns"  # the turn budget ran out before the model finished
    OUT_OF_BUDGET = "out_of_budget"  # a token, cost or time budget was reached (agent/budget.py)
    PROVIDER_ERROR = "provider_error"  # the model endpoint failed beyond retries
    INTERRUPTED = "interrupted"  # the user stopped the run


class _Event(BaseModel):
    # Every field is written on every line, so the printed schema (`lathe schema
    # events`, serialization mode) lists every field as required.
    model_config = ConfigDict(
        frozen=True, extra="forbid", json_schema_serialization_defaults_required=True
    )


class RunStarted(_Event):
    type: Literal["run_started"] = "run_started"
    task: str
    model: str
    workspace: str
    session_id: str | None = None  # None: the run is recorded in no session
    # Whose the task is: a person's; lathe's own words when it goes on by itself
    # (the `continue_task` words); or, for a subagent, its parent model's brief.
    origin: Literal["user", "lathe", "parent"] = "user"


class Notice(_Event):
    """Something the user should know that is not part of the conversation: a sandbox
    that cannot start, a default model chosen for them, a session warning."""

    type: Literal["notice"] = "notice"
    level: Literal["info", "warning"]
    message: str


class TurnStarted(_Event):
    type: Literal["turn_started"] = "turn_started"
    turn: int


class TextDelta(_Event):
    type: Literal["text_delta"] = "text_delta"
    text: str


class ThinkingDelta(_Event):
    type: Literal["thinking_delta"] = "thinking_delta"
    text: str


class AssistantReply(_Event):
    """The model's complete reply for one turn, as it enters the conversation."""

    type: Literal["assistant_reply"] = "assistant_reply"
    message: AssistantMessage


class ModelRequestFinished(_Event):
    """One model request answered (after any retries): what was asked and what it cost.
    `parameters` holds only request options (never a key or a header)."""

    type: Literal["model_request"] = "model_request"
    turn: int
    model: str
    parameters: dict[str, Any] = Field(default_factory=dict)
    latency_ms: float
    first_token_ms: float | None = None  # None: no text or thinking arrived before the end
    retries: int = 0
    usage: Usage
    stop_reason: str
    cost_usd: float | None = None  # None: the model has no prices in the catalog


class ToolStarted(_Event):
    type: Literal["tool_started"] = "tool_started"
    call_id: str
    name: str
    arguments: dict[str, Any]
    summary: str  # the key argument, e.g. the path or the command
    note: str = ""
    """Set when lathe made the call itself, not the model: why ("the code in the reply")."""

    @property
    def label(self) -> str:
        """How a face names the call: "edit app.py", and lathe's note when it made it."""
        label = f"{self.name} {self.summary}".strip()
        return f"{label} ({self.note})" if self.note else label


class ToolFinished(_Event):
    type: Literal["tool_finished"] = "tool_finished"
    call_id: str
    name: str
    is_error: bool
    summary: str  # one line: "42 lines", "exit 1", "not found: ..."
    duration_ms: float
    details: dict[str, Any] = Field(default_factory=dict)  # e.g. diff, exit_code
    output: str = ""
    """What the model was given as the result (secrets masked), capped to
    TOOL_OUTPUT_CHARS: the head and the tail around a marker saying how much was left out."""

    @field_validator("output")
    @classmethod
    def _capped(cls, output: str) -> str:
        return cap_output(output)


def cap_output(text: str, limit: int = TOOL_OUTPUT_CHARS) -> str:
    """`text` when it fits in `limit` characters, else its head and tail around a marker
    saying how many characters were left out. The result fits, so capping twice changes
    nothing (an event is validated again when it is masked)."""
    if len(text) <= limit:
        return text
    # The marker is sized for the longest count it could hold, so the result fits.
    room = limit - len(_cut_marker(len(text)))
    head, tail = text[: room - room // 2], text[len(text) - room // 2 :]
    return head + _cut_marker(len(text) - len(head) - len(tail)) + tail


def _cut_marker(left_out: int) -> str:
    return f"\n[... {left_out:,} characters left out; the session keeps the whole output ...]\n"


class Retrying(_Event):
    type: Literal["retry"] = "retry"
    attempt: int
    max_attempts: int
    wait_s: float
    error: str


class StallNudge(_Event):
    type: Literal["stall_nudge"] = "stall_nudge"
    tool: str
    repeats: int


class Compacted(_Event):
    """The older history was replaced by a summary (the session file keeps all of it)."""

    type: Literal["compaction"] = "compaction"
    tokens_before: int
    tokens_after: int
    reason: str  # "budget" or "context_too_long"


class VerifyStarted(_Event):
    type: Literal["verify_started"] = "verify_started"
    command: str
    baseline: bool = False  # the check run before the model's first turn (verify_first)


class VerifyFinished(_Event):
    type: Literal["verify_finished"] = "verify_finished"
    command: str
    exit_code: int | None
    passed: bool
    output_tail: str
    baseline: bool = False
    duration_ms: float = 0.0
    timed_out: bool = False

    def how_it_ended(self) -> str:
        """`exit 1`, or that it ran out of time or was cut before it ended (its exit code
        is then null)."""
        if self.timed_out:
            return f"timed out after {self.duration_ms / 1000:.0f}s (agent.verify_timeout_s)"
        if self.exit_code is None:
            return f"cut after {self.duration_ms / 1000:.0f}s, before it ended"
        return f"exit {self.exit_code}"


class Evidence(BaseModel):
    """The last test-like command the model ran after its last edit, when unverified."""

    model_config = ConfigDict(frozen=True)
    command: str
    exit_code: int | None

    def outcome(self) -> str:
        """How the command ended, in words: `exited 1`, or that it is unclear (its exit
        status need not be the runner's and its output gave no counts)."""
        if self.exit_code is None:
            return "ran with an unclear outcome"
        return f"exited {self.exit_code}"


class RunError(BaseModel):
    """What the provider failed with, for a program: the kind of failure, the HTTP
    status (None without one), the provider's request id (None when it sent none), the
    retries spent on the request, and the message shown to the user."""

    model_config = ConfigDict(
        frozen=True, extra="forbid", json_schema_serialization_defaults_required=True
    )
    kind: ErrorKind
    status: int | None = None
    request_id: str | None = None
    retries: int = 0
    message: str

    @classmethod
    def from_provider_error(cls, error: ProviderError) -> RunError:
        return cls(
            kind=error.kind,
            status=error.status,
            request_id=error.request_id,
            retries=error.retries,
            message=str(error),
        )


class RunFinished(_Event):
    type: Literal["run_finished"] = "run_finished"
    status: RunStatus
    turns: int
    usage: Usage
    answer: str
    reason: str = ""  # why the run ended, in words
    evidence: Evidence | None = None
    cost_usd: float | None = None  # summed over the run's replies; None: prices unknown
    error: RunError | None = None  # set when the provider's failure ended the run


class AttemptStarted(_Event):
    """A headless run starts over (`agent.attempts`): the last attempt ended without
    passing the verify command, the workspace is back to how the run found it, and the
    model begins again with a fresh conversation."""

    type: Literal["attempt_started"] = "attempt_started"
    attempt: int
    attempts: int
    previous_status: RunStatus
    previous_reason: str = ""
    kept: list[str] = []
    """Files changed by someone else during the last attempt: left as they are."""


class Queued(_Event):
    """A command or a model call waits for a slot: the service bounds how many run at once
    across its sessions (`serve.max_commands`, `serve.max_model_calls`). It starts once
    one frees; nothing fails for the wait."""

    type: Literal["queued"] = "queued"
    what: Literal["command", "model_call"]
    waiting: int  # how many wait for a slot of this kind, this one included
    limit: int  # how many may run at once


class ApprovalRequested(_Event):
    """A call waits for a person's answer (the service, where the answer comes over HTTP
    or from the web page). The pending approval is also an entry of the session file, so it
    outlives a restart of the server."""

    type: Literal["approval_requested"] = "approval_requested"
    approval_id: str
    call_id: str
    tool: str
    arguments: dict[str, Any]
    reason: str  # why it needs a person
    key: str  # what "always" would remember, e.g. "bash(npm test)"
    preview: str = ""  # the exact command, or the diff the call would make
    timeout_s: float | None = None  # denied after this long (an unattended session)


class ApprovalResolved(_Event):
    """A pending approval was answered: by a person (`once`, `always`, `deny`), or denied
    because nobody answered in time (`by` = "timeout")."""

    type: Literal["approval_resolved"] = "approval_resolved"
    approval_id: str
    choice: Literal["once", "always", "deny"]
    reason: str = ""
    by: Literal["user", "timeout"] = "user"


class ChildEvent(_Event):
    """An event of a child agent (the `task` tool's), in the parent's stream: which
    child (`child_id`, its session id), the parent's call that started it
    (`parent_call_id`), the child's `description`, and the child's own event."""

    type: Literal["child_event"] = "child_event"
    child_id: str
    parent_call_id: str
    description: str = ""
    event: AgentEvent


AgentEvent = Annotated[
    RunStarted
    | Notice
    | AttemptStarted
    | TurnStarted
    | TextDelta
    | ThinkingDelta
    | AssistantReply
    | ModelRequestFinished
    | ToolStarted
    | ToolFinished
    | Retrying
    | StallNudge
    | Compacted
    | VerifyStarted
    | VerifyFinished
    | RunFinished
    | Queued
    | ApprovalRequested
    | ApprovalResolved
    | ChildEvent,
    Field(discriminator="type"),
]
ChildEvent.model_rebuild()


@functools.cache
def event_adapter() -> TypeAdapter[AgentEvent]:
    """The adapter that reads an event back from its JSON or a dict, and gives the
    schema: built once (a client read every event of a stream through a new one)."""
    return TypeAdapter(AgentEvent)


# JSON leaves these raw inside strings, and `str.splitlines` (httpx's `iter_lines` too)
# breaks a line at each.
_LINE_BREAKS = str.maketrans({"\u2028": "\\u2028", "\u2029": "\\u2029", "\x85": "\\u0085"})


def json_line(event: BaseModel) -> str:
    """The event as one line of JSON (no newline at its end), which stays one line for a
    reader that splits on every line break Python knows."""
    return event.model_dump_json().translate(_LINE_BREAKS)
