"""Approvals in the terminal: reading the person's answer and showing what is approved.

The seam itself is `lathe.policy.gate.Approver` (`async ask(ApprovalRequest) ->
ApprovalAnswer`), declared by the policy layer, which decides when a call needs a person.
`InteractiveApp.ask` implements it: it prints the request (the exact command, or the
diff the call would make, as its tool predicts it: `Tool.preview_change`; a call that
changes something and has no diff, its arguments (`arguments_text`); one over 80 lines
as its start and its end, the count left out between them), then the prompt takes `y`
(allow once), `a` (allow always: the gate remembers the request's key for the session,
and the session file keeps it for resume; the prompt says what that key covers,
`always_scope`; `/approval` lists them, `/approval revoke N` withdraws one), `n
[reason]` (deny; the reason goes to the model) or `v` (print the whole diff or call,
then ask again; never a message, even with nothing more to show). The result of a call
approved with its whole diff seen does not show it again; one approved from a cut view
shows it.
"""

from __future__ import annotations

import json
from typing import Any

from lathe.exec.terminal import visible_name


def parse_answer(text: str) -> tuple[str, str] | None:
    """(choice, reason) for a typed answer, choice in once/always/deny; None when the
    text is not an answer. Only a deny takes words after it (its reason): "a question
    first: ..." is a message, not "always"."""
    word, _, rest = text.strip().partition(" ")
    match word.lower():
        case "y" | "yes" | "once" if not rest.strip():
            return "once", ""
        case "a" | "always" if not rest.strip():
            return "always", ""
        case "n" | "no" | "deny" | "d":
            return "deny", rest.strip()
    return None


def always_scope(key: str, tools: Any, command: str | None = None) -> str:
    """What answering `a` to the request with `key` allows for the rest of the session,
    in words: "this exact command" (`command`'s own key), "write (any file)" (the key of
    a mode's ask is the tool's name: every call of it, whatever its path), or the rule
    or protected path the key names, as written. `a` on one file's write had allowed
    every write with nothing saying so."""
    from lathe.policy.gate import command_key

    if command is not None and key == command_key(command):
        return "this exact command"
    if "(" in key:
        return visible_name(key)
    tool = tools.get(key)
    return f"{key} (any file)" if tool is not None and tool.path_argument else f"{key} (every call)"


def arguments_text(arguments: dict[str, Any]) -> str:
    """A call's arguments for a person approving it when no diff can be shown (a change
    to a binary file, a tool of a server): each on its own line, a text of several
    lines under its name, indented."""
    lines: list[str] = []
    for name, value in arguments.items():
        text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
        if "\n" in text.rstrip("\n"):
            lines.append(f"{name}:")
            lines += [f"  {line}" for line in text.rstrip("\n").split("\n")]
        else:
            lines.append(f"{name}: {text.rstrip(chr(10))}")
    return "\n".join(lines) + "\n"
