"""Approvals in the terminal: reading the person's answer and showing what is approved.

The seam itself is `lathe.policy.gate.Approver` (`async ask(ApprovalRequest) ->
ApprovalAnswer`), declared by the policy layer, which decides when a call needs a person.
`InteractiveApp.ask` implements it: it prints the request (the exact command, or the
diff the call would make, as its tool predicts it: `Tool.preview_change`; one over 80
lines as its start and its end, the count left out between them), then the prompt
takes `y` (allow once), `a` (allow always: the gate remembers the request's key for the
session, and the session file keeps it for resume; `/approval` lists them, `/approval
revoke N` withdraws one), `n [reason]` (deny; the reason goes to the model) or `v`
(print the whole diff, then ask again). The result of a call approved with its whole
diff seen does not show it again; one approved from a cut view shows it.
"""

from __future__ import annotations


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
