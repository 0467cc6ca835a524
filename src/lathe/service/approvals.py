"""Approvals answered over HTTP, durable across restarts of the server.

`RemoteApprover` is a served session's `lathe.policy.gate.Approver`. When the gate asks,
it writes an `approval_request` entry to the session file, emits `approval_requested`
and waits for `answer` (a person through the API or the page). The answer is an
`approval_answer` entry. A server that restarts finds the requests without answers
(`restore`): they are listed as pending, and an answer given then is kept for the call
(by its id) until the session runs the paused call again and the gate asks about it.
A session with an unattended policy (`timeout_s`) denies a request nobody answered in
time, instead of waiting for ever.
"""

from __future__ import annotations

import asyncio
import json
import secrets
from collections.abc import Callable
from typing import Any, Literal

from lathe.events import AgentEvent, ApprovalRequested, ApprovalResolved
from lathe.policy.gate import ApprovalAnswer, ApprovalRequest
from lathe.session.entries import ApprovalAnswerEntry, ApprovalRequestEntry
from lathe.tools.base import CURRENT_CALL

Choice = Literal["once", "always", "deny"]


class UnknownApproval(LookupError):
    """No pending approval has that id in this session."""


def pending_json(request: ApprovalRequestEntry) -> dict[str, Any]:
    """A pending approval as the API lists it."""
    return {
        "id": request.approval_id,
        "call_id": request.call_id,
        "tool": request.tool,
        "arguments": request.arguments,
        "reason": request.reason,
        "key": request.key,
        "preview": request.preview,
    }


class RemoteApprover:
    """A served session's Approver (see the module doc): every request a session entry
    and an event, every answer too; at most one answer per request, the first."""

    def __init__(
        self,
        session: Any,
        emit: Callable[[AgentEvent], None],
        mask: Callable[[AgentEvent], Any],
        *,
        timeout_s: float | None = None,
    ) -> None:
        """`emit` publishes an event; `mask` is the run's redactor (`Redactor.event`),
        applied before a request is written to the session file."""
        self.session = session
        self.timeout_s = timeout_s
        self.pending: dict[str, ApprovalRequestEntry] = {}  # as in the file
        self._emit = emit
        self._mask = mask
        self._waiting: dict[str, asyncio.Future[ApprovalAnswer]] = {}
        # Answered after a restart, by call id, with what was asked (tool, arguments): it
        # answers that very call only (an id comes again in a later reply of the model,
        # and a kept "once" once approved a different command under it).
        self._kept: dict[str, tuple[tuple[str, str], ApprovalAnswer]] = {}
        # Set when the server shuts down: a request cut then stays pending in the file,
        # for the next start, instead of being denied.
        self.closing = False
        # The diff a call would make, for the person deciding (`Tool.preview_change`);
        # set by the session once its tools exist.
        self.diff_of: Callable[[ApprovalRequest], str | None] = lambda request: None

    def restore(self, open_calls: set[str]) -> list[ApprovalRequestEntry]:
        """The session's requests that no answer follows (a restart found them), those
        whose call is still open in the conversation (`open_calls`, call ids): a call
        answered since (a `lathe run --resume` closed it) waits for nothing."""
        for entry in self.session.entries:
            if isinstance(entry, ApprovalRequestEntry):
                self.pending[entry.approval_id] = entry
            elif isinstance(entry, ApprovalAnswerEntry):
                self.pending.pop(entry.approval_id, None)
        for approval_id, pending in list(self.pending.items()):
            if pending.call_id not in open_calls:
                del self.pending[approval_id]
        return list(self.pending.values())

    @property
    def paused(self) -> bool:
        """Whether a restored request waits with no run to resume it yet."""
        return any(a not in self._waiting for a in self.pending)

    async def ask(self, request: ApprovalRequest) -> ApprovalAnswer:
        call_id = CURRENT_CALL.get()
        kept = self._kept.pop(call_id, None)
        if kept is not None and kept[0] == _asked(request.tool, request.arguments):
            return kept[1]
        approval_id = secrets.token_hex(4)
        event = self._mask(
            ApprovalRequested(
                approval_id=approval_id,
                call_id=call_id,
                tool=request.tool,
                arguments=request.arguments,
                reason=request.reason,
                key=request.key,
                preview=self.diff_of(request) or request.preview,
                timeout_s=self.timeout_s,
            )
        )
        pending = self.session.append(
            ApprovalRequestEntry(
                approval_id=approval_id, call_id=call_id, tool=event.tool,
                arguments=event.arguments, reason=event.reason, key=event.key,
                preview=event.preview,
            )
        )  # fmt: skip
        future: asyncio.Future[ApprovalAnswer] = asyncio.get_running_loop().create_future()
        self.pending[approval_id] = pending
        self._waiting[approval_id] = future
        self._emit(event)
        try:
            if self.timeout_s is None:
                return await future
            return await asyncio.wait_for(asyncio.shield(future), self.timeout_s)
        except TimeoutError:
            if future.done():  # answered in the very tick the wait ran out
                return future.result()
            why = f"nobody answered within {self.timeout_s:g} s (an unattended session)"
            return self._resolve(approval_id, ApprovalAnswer("deny", why, by="timeout"))
        except asyncio.CancelledError:
            if approval_id in self.pending and not self.closing:  # the run was stopped
                self._resolve(approval_id, ApprovalAnswer("deny", "the run was stopped"))
            raise
        finally:
            self._waiting.pop(approval_id, None)

    def deny_restored(self, why: str, *, by: Literal["user", "timeout"] = "user") -> bool:
        """Deny every request a restart left pending (an unattended session's once its
        wait has passed again, or all of them when the paused run is aborted); the
        denial is kept for each call. Whether there was one."""
        restored = [a for a in self.pending if a not in self._waiting]
        for approval_id in restored:
            pending = self.pending[approval_id]
            denied = self._resolve(approval_id, ApprovalAnswer("deny", why, by=by))
            self._kept[pending.call_id] = (_asked(pending.tool, pending.arguments), denied)
        return bool(restored)

    def forget_kept(self) -> None:
        """A new message starts a run: what was answered for calls of an earlier one
        answers nothing of it."""
        self._kept.clear()

    def answer(self, approval_id: str, choice: Choice, reason: str = "") -> bool:
        """Answer a pending approval. True when a run was waiting for it; False when it
        was restored after a restart, so the session must run the paused call again.
        Raises UnknownApproval for an id that is not pending."""
        if approval_id not in self.pending:
            raise UnknownApproval(approval_id)
        waiting = approval_id in self._waiting
        pending = self.pending[approval_id]
        answer = self._resolve(approval_id, ApprovalAnswer(choice, reason))
        if not waiting:
            self._kept[pending.call_id] = (_asked(pending.tool, pending.arguments), answer)
        return waiting

    def _resolve(self, approval_id: str, answer: ApprovalAnswer) -> ApprovalAnswer:
        if self.pending.pop(approval_id, None) is None:  # answered already: the first wins
            future = self._waiting.get(approval_id)
            return future.result() if future is not None and future.done() else answer
        self.session.append(
            ApprovalAnswerEntry(
                approval_id=approval_id, choice=answer.choice, reason=answer.reason, by=answer.by
            )
        )
        self._emit(
            ApprovalResolved(
                approval_id=approval_id, choice=answer.choice, reason=answer.reason, by=answer.by
            )
        )
        future = self._waiting.get(approval_id)
        if future is not None and not future.done():
            future.set_result(answer)
        return answer


def _asked(tool: str, arguments: dict[str, Any]) -> tuple[str, str]:
    """What a request asked, to match a kept answer to the very call it answered."""
    return tool, json.dumps(arguments, sort_keys=True, default=str)
