"""Approvals in the terminal: reading the person's answer and showing what is approved.

The seam itself is `lathe.policy.gate.Approver` (`async ask(ApprovalRequest) ->
ApprovalAnswer`), declared by the policy layer, which decides when a call needs a person.
`InteractiveApp.ask` implements it: it prints the request (the exact command, or the
diff an edit or write would make), then the prompt takes `y` (allow once), `a` (allow
always: the gate remembers the request's key for the session, and the session file
keeps it for resume; `/approval` lists them, `/approval revoke N` withdraws one) or
`n [reason]` (deny; the reason goes to the model).
"""

from __future__ import annotations

import difflib
from pathlib import Path
from typing import Any

FILE_TOOLS = frozenset({"edit", "write"})


def parse_answer(text: str) -> tuple[str, str] | None:
    """(choice, reason) for a typed answer, choice in once/always/deny; None when the
    text is not an answer."""
    word, _, rest = text.strip().partition(" ")
    match word.lower():
        case "y" | "yes" | "once":
            return "once", ""
        case "a" | "always":
            return "always", ""
        case "n" | "no" | "deny" | "d":
            return "deny", rest.strip()
    return None


def preview_diff(name: str, arguments: dict[str, Any], workspace: Path) -> str | None:
    """The change an edit or write would make, for the person approving it; None when
    it cannot be predicted (the tool itself then reports the problem to the model)."""
    if name not in FILE_TOOLS:
        return None
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
        count = -1 if arguments.get("replace_all") else 1
        new = old.replace(find, replace, count)
    lines = difflib.unified_diff(
        old.splitlines(keepends=True),
        new.splitlines(keepends=True),
        fromfile=f"a/{path}",
        tofile=f"b/{path}",
        n=2,
    )
    return "".join(line if line.endswith("\n") else line + "\n" for line in lines)
