"""What a session file holds: one header line, then one entry per line.

Every line has a `type` literal. The header is a pydantic model; the entries are frozen
pydantic dataclasses with slots (like the values in `lathe.types`: a long session holds
tens of thousands of them, and a slotted instance has no `__dict__` to pay for), parsed
and written by one discriminated-union adapter, `ENTRY_ADAPTER` (`validate_json`,
`dump_json`); copy one with a change through `dataclasses.replace`. Entries carry `id`
(short, unique within the file), `parent` (the id of the entry before it on its branch,
or None for the first) and `ts`; the parent links make the file a tree, and the entry
appended last is the current leaf.

To add an entry type: define a dataclass deriving from `BaseEntry`, with the same
decorator and a new `type` literal, add it to `Entry`, and handle it where `match`
statements over entries fail the type check. Adding an entry type or a field (to an
entry or the header), renaming a field or changing what one means is a new format
version with a step in `migrations.py`, a no-op one when older entries read as they are
(`READ_AS_CURRENT`): the entries forbid unknown fields, so a lathe that knows only the
older format would read each line with the new type or field as a corrupt entry and
re-attach the lines after it; a newer version makes it refuse the file in one line
that says to upgrade.
"""

from __future__ import annotations

import secrets
from collections.abc import Callable, Iterable
from datetime import UTC, datetime
from typing import Annotated, Any, Literal, NamedTuple

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter
from pydantic.dataclasses import dataclass

from lathe.types import Message, Usage

FORMAT_VERSION = 3


def utc_now() -> datetime:
    return datetime.now(UTC)


def new_session_id() -> str:
    return secrets.token_hex(6)


def new_entry_id() -> str:
    return secrets.token_hex(4)


_FORBID = ConfigDict(extra="forbid")


class Header(BaseModel):
    """The first line of every session file. A fork names where it came from."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    type: Literal["header"] = "header"
    version: int = FORMAT_VERSION
    id: str
    cwd: str
    created: datetime = Field(default_factory=utc_now)
    model: str
    parent_session: str | None = None
    parent_entry: str | None = None
    # A child's: the parent's task call that started it. Written only when set, so the
    # header of every other session keeps the bytes it had before the field.
    parent_call: str | None = Field(default=None, exclude_if=lambda value: value is None)


@dataclass(frozen=True, slots=True, kw_only=True, config=_FORBID)
class BaseEntry:
    # `id` and `parent` are filled in by `Session.append`; callers leave them empty.
    id: str = ""
    parent: str | None = None
    ts: datetime = Field(default_factory=utc_now)


@dataclass(frozen=True, slots=True, kw_only=True, config=_FORBID)
class MessageEntry(BaseEntry):
    """A user message, an assistant reply (text, tool calls, usage, model) or a tool result."""

    type: Literal["message"] = "message"
    message: Message


@dataclass(frozen=True, slots=True, kw_only=True, config=_FORBID)
class CompactionEntry(BaseEntry):
    """The branch before `first_kept` is replaced by `summary` when building context.

    Appended after the last message it summarises; `first_kept` is an earlier entry on
    the same branch. See `lathe.session.conversation.apply_compaction`.
    """

    type: Literal["compaction"] = "compaction"
    summary: str
    first_kept: str
    tokens_before: int
    tokens_after: int


@dataclass(frozen=True, slots=True, kw_only=True, config=_FORBID)
class CheckpointEntry(BaseEntry):
    """A workspace snapshot taken before `turn`; `ref` names it in the checkpoint store."""

    type: Literal["checkpoint"] = "checkpoint"
    ref: str
    turn: int


@dataclass(frozen=True, slots=True, kw_only=True, config=_FORBID)
class RunSettings:
    """What a run was started with besides its model, for whoever goes on with the
    session elsewhere (`lathe serve` resuming a `lathe run` session) to go on alike,
    never with a default in their place. Never a secret: a `base_url` holding
    credentials is kept masked, `base_url_masked` set, and a resume must be given it."""

    base_url: str | None  # the base_url a layer set (--base-url, ...); None: the model's own
    base_url_masked: bool = False
    approval: str  # a plain string, like `RunEndEntry.status`: a newer mode still loads
    verify: str | None = None  # as given to the run (a flag, a served session's option)
    max_turns: int | None = None  # likewise


@dataclass(frozen=True, slots=True, kw_only=True, config=_FORBID)
class ModelChangeEntry(BaseEntry):
    """The model the session goes on with, from here; `settings`, when a run started
    with it, what else that run was started with (`lathe.ui.recorder.record_run_start`).
    One without them (an interactive /model, a file an older lathe wrote) does not say."""

    type: Literal["model_change"] = "model_change"
    provider: str
    model: str
    # New in format 3. Written only when set, so a model change without them keeps its
    # bytes.
    settings: RunSettings | None = Field(default=None, exclude_if=lambda value: value is None)


@dataclass(frozen=True, slots=True, kw_only=True, config=_FORBID)
class LabelEntry(BaseEntry):
    """Free text attached to a point of the tree, e.g. a name for a fork point."""

    type: Literal["label"] = "label"
    text: str


@dataclass(frozen=True, slots=True, kw_only=True, config=_FORBID)
class ApprovalEntry(BaseEntry):
    """A decision the user made about a policy rule, replayed when the session resumes.
    The latest entry for a rule wins: "revoke" withdraws an "allow" (`/approval revoke`),
    so the call asks again."""

    type: Literal["approval"] = "approval"
    rule: str
    decision: Literal["allow", "deny", "revoke"]


@dataclass(frozen=True, slots=True, kw_only=True, config=_FORBID)
class ApprovalRequestEntry(BaseEntry):
    """A call waiting for a person's answer (a session the service runs). It stays
    pending until an `approval_answer` entry with the same `approval_id` follows: a
    server that restarts lists it again, and answering it then runs the paused call."""

    type: Literal["approval_request"] = "approval_request"
    approval_id: str
    call_id: str
    tool: str
    arguments: dict[str, Any]
    reason: str
    key: str
    preview: str = ""


@dataclass(frozen=True, slots=True, kw_only=True, config=_FORBID)
class ApprovalAnswerEntry(BaseEntry):
    """The answer to an `approval_request`: by a person, or a denial because an
    unattended session's wait ran out (`by` = "timeout")."""

    type: Literal["approval_answer"] = "approval_answer"
    approval_id: str
    choice: Literal["once", "always", "deny"]
    reason: str = ""
    by: Literal["user", "timeout"] = "user"


@dataclass(frozen=True, slots=True, kw_only=True, config=_FORBID)
class RunEndEntry(BaseEntry):
    """How one run over this session ended; `status` is a `lathe.events.RunStatus` value.

    Kept as a plain string so a file written by a newer lathe with a new status still
    loads.
    """

    type: Literal["run_end"] = "run_end"
    status: str
    turns: int
    usage: Usage = Usage()
    reason: str = ""


Entry = Annotated[
    MessageEntry
    | CompactionEntry
    | CheckpointEntry
    | ModelChangeEntry
    | LabelEntry
    | ApprovalEntry
    | ApprovalRequestEntry
    | ApprovalAnswerEntry
    | RunEndEntry,
    Field(discriminator="type"),
]

ENTRY_ADAPTER: TypeAdapter[Entry] = TypeAdapter(Entry)


def last_model_change(branch: Iterable[Entry]) -> ModelChangeEntry | None:
    """The last model change of `branch` (a session's `branch()`), or None."""
    changes = [entry for entry in branch if isinstance(entry, ModelChangeEntry)]
    return changes[-1] if changes else None


def run_settings(
    base_url: str | None,
    approval: str,
    verify: str | None,
    max_turns: int | None,
    mask: Callable[[str], str] = lambda text: text,
) -> RunSettings:
    """`RunSettings` that hold no secret: each text through `mask` (the run's redactor,
    as every other entry), a `base_url` holding credentials masked (`masked_url`), and
    each credential written in `verify` (`mask_credentials`: a connection string's
    password, a key, which no redactor knows as a value); `base_url_masked` says the URL
    recorded is not the one used, and a masked `verify` is asked for again
    (`recorded_run`)."""
    from lathe.config.secrets import mask_credentials, masked_url, url_secrets

    shown = base_url and mask(masked_url(base_url) if url_secrets(base_url) else base_url)
    return RunSettings(
        base_url=shown,
        base_url_masked=shown != base_url,
        approval=approval,
        verify=verify and mask(mask_credentials(verify)),
        max_turns=max_turns,
    )


NO_MODEL = "default"  # a header's model when the session was made naming none (`lathe serve`)


class RecordedRun(NamedTuple):
    """What a session's file says its last run was started with, for going on alike
    (`lathe run --continue`, `lathe serve`'s resume): `options` by name (model, base_url,
    approval, verify, max_turns; what it cannot say left out), and `unsaid`, what it
    cannot say that whoever goes on must be given instead of a default: the names (one
    of them: "endpoint" is a base_url or a model) and why. `settings_said`: whether the
    file records the run's settings at all (an older lathe's does not: `unsaid` says
    so), rather than one the run was given that it keeps masked."""

    options: dict[str, Any]
    unsaid: list[tuple[tuple[str, ...], str]]
    settings_said: bool = True


def recorded_run(branch: Iterable[Entry], header_model: str) -> RecordedRun:
    """The `RecordedRun` of a session's `branch()`, whose header names `header_model`."""
    last = last_model_change(branch)
    model = last.model if last else header_model
    options: dict[str, Any] = {"model": model} if model and model != NO_MODEL else {}
    settings = last and last.settings
    if settings is None:
        why = ("its file does not say which endpoint and approval mode it ran with (an "
               "older lathe, or an interactive one, wrote it)")  # fmt: skip
        return RecordedRun(options, [(("endpoint", "approval"), why)], settings_said=False)
    unsaid: list[tuple[tuple[str, ...], str]] = []
    if settings.base_url_masked:
        why = f"its endpoint {settings.base_url} holds credentials, which lathe does not keep"
        unsaid.append((("base_url",), why))
    verify_masked = bool(settings.verify and _holds_a_mask(settings.verify))
    if verify_masked:
        why = f"its check `{settings.verify}` holds a secret, which lathe does not keep"
        unsaid.append((("verify",), why))
    kept = {"base_url": None if settings.base_url_masked else settings.base_url,
            "approval": settings.approval, "verify": None if verify_masked else settings.verify,
            "max_turns": settings.max_turns}  # fmt: skip
    return RecordedRun(
        options | {name: value for name, value in kept.items() if value is not None}, unsaid
    )


def _holds_a_mask(text: str) -> bool:
    """Whether `text` was recorded with a secret masked: every mask holds `mask_secret`'s
    ellipsis. A command typed with one is asked for again too, never run as recorded."""
    from lathe.config.secrets import mask_secret

    return mask_secret("") in text
