"""The system prompt: short and specific, with the workspace and its AGENTS.md."""

from __future__ import annotations

from pathlib import Path

_AGENTS_FILE_MAX_CHARS = 20_000

_METHOD = """\
You are lathe, a coding agent working in a real repository through tools.

How to work:
1. Inspect before you change anything: use ls, glob and grep to find the relevant
   code, and read the files you will touch.
2. Change code with `edit` (an exact old_string and its replacement). Never rewrite a
   whole file to change a part of it; use `write` only to create new files.
3. Run the tests or the program with `bash` and read the real output. Do not claim a
   fix works until a command you ran shows it.
4. When the work is done and verified, reply with a short summary and no tool call.
   That reply ends the run.

Keep tool outputs small: read a range of lines, grep for a symbol, pipe long command
output through `tail`. Paths are relative to the workspace root."""


def system_prompt(workspace: Path, tool_names: list[str], *, verify_command: str | None) -> str:
    parts = [_METHOD, f"Workspace root: {workspace}", f"Tools: {', '.join(tool_names)}."]
    if verify_command:
        parts.append(
            f"When you finish, lathe runs `{verify_command}` itself; if it fails you will "
            "see its output and continue."
        )
    agents = _agents_file(workspace)
    if agents:
        parts.append(f"Project instructions from AGENTS.md:\n\n{agents}")
    return "\n\n".join(parts)


def _agents_file(workspace: Path) -> str | None:
    path = workspace / "AGENTS.md"
    try:
        text = path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return None
    if len(text) > _AGENTS_FILE_MAX_CHARS:
        text = text[:_AGENTS_FILE_MAX_CHARS] + "\n[AGENTS.md cut here: it is longer]"
    return text.strip() or None
