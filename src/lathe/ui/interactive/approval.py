"""Approvals in the interactive face: the `Approver` seam and an interim gate.

The seam is `Approver.ask(request) -> ApprovalDecision`. The policy layer decides
*whether* a call needs a person (allow / ask / deny); when it says "ask", it builds an
`ApprovalRequest` carrying the exact command or diff and awaits an `Approver`. The
terminal's approver (`lathe.ui.interactive.app`) shows the request inline and waits
for `y` (once), `a` (always) or `n [reason]` (deny, the reason goes to the model).

Contract for `Approver.ask`:
- It returns a decision; it never raises for a "no" (that is `DENY`).
- Cancellation of the awaiting task (the user interrupted the turn) propagates as
  `asyncio.CancelledError`; the approver must leave no prompt behind.
- `ALWAYS` is a promise the caller keeps: the gate stops asking for the same
  `ApprovalRequest.always_key` for the rest of the session.

`ApprovalGate` is an `AgentHooks.before_tool` gate with a deliberately small rule set,
used until the policy package (`lathe.policy`) lands and replaces `_needs_approval`
with real command analysis:
- `read-only`: tools that change nothing run; every other call is denied;
- `ask`: read-only tools run; edits, writes and commands ask;
- `auto`: edits and writes inside the workspace run; commands ask;
- `full`: everything runs.
"""

from __future__ import annotations

import difflib
from dataclasses import dataclass, field
from enum import StrEnum
from pathlib import Path
from typing import Any, Protocol

from lathe.agent.hooks import AgentHooks
from lathe.tools.base import ToolOutput, ToolRegistry

APPROVAL_MODES = ("read-only", "ask", "auto", "full")
_FILE_TOOLS = frozenset({"edit", "write"})


class Choice(StrEnum):
    ONCE = "once"
    ALWAYS = "always"
    DENY = "deny"


@dataclass(frozen=True)
class ApprovalRequest:
    tool: str
    arguments: dict[str, Any]
    title: str  # one line: "run command", "edit src/app.py"
    command: str | None = None  # the exact command, for bash
    diff: str | None = None  # the exact change, for edit/write (unified diff)
    reason: str = ""  # why the policy asks, e.g. "commands need approval in ask mode"
    always_key: str = ""  # what an ALWAYS answer covers


@dataclass(frozen=True)
class ApprovalDecision:
    choice: Choice
    reason: str = ""  # for DENY: what the user said, passed to the model

    @property
    def allowed(self) -> bool:
        return self.choice is not Choice.DENY


class Approver(Protocol):
    async def ask(self, request: ApprovalRequest) -> ApprovalDecision: ...


def parse_answer(text: str) -> ApprovalDecision | None:
    """A typed answer to an approval prompt; None when it is not one."""
    word, _, rest = text.strip().partition(" ")
    match word.lower():
        case "y" | "yes" | "once":
            return ApprovalDecision(Choice.ONCE)
        case "a" | "always":
            return ApprovalDecision(Choice.ALWAYS)
        case "n" | "no" | "deny" | "d":
            return ApprovalDecision(Choice.DENY, rest.strip())
    return None


@dataclass
class ApprovalGate(AgentHooks):
    approver: Approver
    tools: ToolRegistry
    workspace: Path
    mode: str = "ask"
    _always: set[str] = field(default_factory=set)

    async def before_tool(self, name: str, arguments: dict[str, Any]) -> ToolOutput | None:
        verdict = self._needs_approval(name)
        if verdict == "allow":
            return None
        if verdict == "deny":
            return ToolOutput(
                content=f"Denied: the approval mode is {self.mode}, which does not allow "
                f"the {name} tool. Ask the user to change the mode with /approval if the "
                "change is needed.",
                is_error=True,
                summary=f"denied ({self.mode} mode)",
            )
        request = build_request(name, arguments, self.workspace)
        if request.always_key in self._always:
            return None
        decision = await self.approver.ask(request)
        if decision.choice is Choice.ALWAYS:
            self._always.add(request.always_key)
        if decision.allowed:
            return None
        said = f" The user said: {decision.reason}" if decision.reason else ""
        return ToolOutput(
            content=f"Denied: the user did not allow this {name} call.{said} Do not retry "
            "the same call; take the user's answer into account.",
            is_error=True,
            summary="denied by the user" + (f": {decision.reason}" if decision.reason else ""),
        )

    def _needs_approval(self, name: str) -> str:
        tool = self.tools.get(name)
        read_only = tool is not None and tool.read_only
        match self.mode:
            case "full":
                return "allow"
            case "read-only":
                return "allow" if read_only else "deny"
            case "auto":
                return "allow" if read_only or name in _FILE_TOOLS else "ask"
            case _:
                return "allow" if read_only else "ask"


def build_request(name: str, arguments: dict[str, Any], workspace: Path) -> ApprovalRequest:
    if name == "bash":
        command = str(arguments.get("command", ""))
        first = command.split()[0] if command.split() else ""
        return ApprovalRequest(
            name, arguments, "run command", command=command, always_key=f"bash:{first}"
        )
    if name in _FILE_TOOLS:
        path = str(arguments.get("path", ""))
        return ApprovalRequest(
            name,
            arguments,
            f"{'edit' if name == 'edit' else 'write'} {path}",
            diff=preview_diff(name, arguments, workspace),
            always_key=f"files:{name}",
        )
    return ApprovalRequest(name, arguments, f"call {name}", always_key=f"tool:{name}")


def preview_diff(name: str, arguments: dict[str, Any], workspace: Path) -> str | None:
    """The change an edit or write would make, for the person approving it; None when
    it cannot be predicted (the tool itself then reports the problem to the model)."""
    path = str(arguments.get("path", ""))
    target = (workspace / path).resolve()
    try:
        old = target.read_text(encoding="utf-8") if target.is_file() else ""
    except (OSError, UnicodeDecodeError):
        return None
    if name == "write":
        new = str(arguments.get("content", ""))
    else:
        find = str(arguments.get("old_string", ""))
        if not find or find not in old:
            return None
        replace = str(arguments.get("new_string", ""))
        new = (
            old.replace(find, replace)
            if arguments.get("replace_all")
            else old.replace(find, replace, 1)
        )
    lines = difflib.unified_diff(
        old.splitlines(keepends=True),
        new.splitlines(keepends=True),
        fromfile=f"a/{path}",
        tofile=f"b/{path}",
        n=2,
    )
    return "".join(line if line.endswith("\n") else line + "\n" for line in lines)
