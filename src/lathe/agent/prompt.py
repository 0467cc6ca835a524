"""The system prompt: short and specific, with the workspace, its instruction files
(`lathe.instructions`) and the memory of earlier sessions (`lathe.memory`)."""

from __future__ import annotations

import os
import stat
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from lathe.patterns import SECRET_LIKE
from lathe.words import Words, load_words

_OVERVIEW_MAX_FILES = 150
_OVERVIEW_MAX_BYTES = 4_000  # about 1,300 tokens: 150 typical paths fit
_SNAPSHOT_END = "----- end of files -----"


@dataclass(frozen=True)
class SystemPrompt:
    text: str
    has_snapshot: bool = False
    """Whether `text` carries every workspace file's contents (`workspace_snapshot`):
    the code is in view before the model reads anything."""


def system_prompt(
    workspace: Path,
    tool_names: list[str],
    *,
    verify_command: str | None,
    snapshot_max_bytes: int = 0,
    no_edit: Sequence[str] = (),
    no_read: Sequence[str] = (),
    words: Words | None = None,
    skills: Sequence[tuple[str, str]] = (),
    skills_max_bytes: int = 0,
    instructions: str | None = None,
    memory: str | None = None,
    instruction_names: Sequence[str] = (),
    snapshot_leave_out: Sequence[str] = (),
) -> SystemPrompt:
    """`words`: the template set the method and the verify line come from (the
    profile's; default: the built-in set). `snapshot_max_bytes`: when every file of the
    workspace fits in this many bytes together, their contents are included too (see
    `workspace_snapshot`), and the result says so. `no_edit`, `no_read`: path patterns
    the user's deny rules protect, said up front so the model does not spend turns
    finding them out. `instructions` and `memory`: the instruction files and the memory,
    as their modules render them; files named like one of `instruction_names` are never
    part of the snapshot (instructions reach the model only as instructions).
    `skills`: (name, description) pairs listed within `skills_max_bytes`
    (`skills_section`). `snapshot_leave_out`: path patterns of files the snapshot
    never holds (they stay in the file list)."""
    # What changes least comes first, so a server's prompt cache reuses the longest
    # prefix across runs; the workspace path and its file list come last.
    words = words or load_words()
    parts = [words.say("system"), f"Tools: {', '.join(tool_names)}."]
    if verify_command:
        parts.append(words.say("verify_on_finish", command=verify_command))
    if no_edit or no_read:
        lines = ["The user protects these paths; every tool, commands included, is refused:"]
        if no_edit:
            lines.append(f"- no changes to: {_paths_said(no_edit)}")
        if no_read:
            lines.append(f"- no reading of: {_paths_said(no_read)}")
        parts.append("\n".join(lines))
    parts += [section for section in (instructions, memory) if section]
    listed = skills_section(skills, skills_max_bytes)
    if listed:
        parts.append(listed)
    parts.append(f"Workspace root: {workspace}")
    files = list_files(workspace)
    snapshot = None
    if files:
        parts.append(workspace_overview(files))
        snapshot = workspace_snapshot(
            workspace, files, snapshot_max_bytes, no_edit=no_edit, no_read=no_read,
            leave_out=instruction_names, leave_out_patterns=snapshot_leave_out,
        )  # fmt: skip
        if snapshot:
            parts.append(snapshot)
    return SystemPrompt("\n\n".join(parts), has_snapshot=bool(snapshot))


def _paths_said(patterns: Sequence[str]) -> str:
    """Path patterns as the prompt names them: that of a rule naming no path (`--deny
    read`) as "every file", which a small model reads as it is meant."""
    from lathe.policy.rules import EVERY_PATH

    return ", ".join("every file" if p == EVERY_PATH else p for p in patterns)


_SKILL_DESCRIPTION_MAX_CHARS = 300


def skills_section(skills: Sequence[tuple[str, str]], max_bytes: int) -> str | None:
    """The skills the `skill` tool serves, one `- name: description` line each, in the
    order given, within `max_bytes` (the line about those left out included). A skill
    that does not fit ends the list: a line says how many were left out and that the
    tool, called without a name, lists them all. None when there are none, or no room."""
    if not skills or max_bytes <= 0:
        return None
    head = "Skills (instructions for a kind of task; call skill with the name to read one first):"
    lines = [head]
    size = len(head.encode())
    for number, (name, description) in enumerate(skills):
        if len(description) > _SKILL_DESCRIPTION_MAX_CHARS:
            description = description[: _SKILL_DESCRIPTION_MAX_CHARS - 3].rstrip() + "..."
        line = f"- {name}: {description}"
        left = len(skills) - number - 1
        # Room for this line, and for the "left out" line should the next not fit.
        tail = len(_skills_left_out(left).encode()) + 1 if left else 0
        if size + 1 + len(line.encode()) + tail > max_bytes:
            if number == 0:
                only_count = f"{head}\n{_skills_left_out(len(skills))}"
                return only_count if len(only_count.encode()) <= max_bytes else None
            lines.append(_skills_left_out(len(skills) - number))
            break
        lines.append(line)
        size += 1 + len(line.encode())
    return "\n".join(lines)


def _skills_left_out(count: int) -> str:
    noun = "skill is" if count == 1 else "skills are"
    return f"({count} more {noun} not listed here: skill with no name lists them all.)"


def list_files(workspace: Path) -> list[str]:
    """The workspace's files, git-ignored ones left out, sorted; [] if rg cannot run."""
    from lathe.tools.grep import RG_COMMON, rg_lines

    listing = rg_lines(["--files", *RG_COMMON, "--glob=!.lathe"], cwd=workspace, timeout_s=5)
    return sorted(line for line in listing or [] if line)


def workspace_overview(
    files: list[str], max_files: int = _OVERVIEW_MAX_FILES, max_bytes: int = _OVERVIEW_MAX_BYTES
) -> str:
    """The file list, so the model starts from real names instead of guessing them.
    Small models otherwise invent paths and create files that already exist. At most
    `max_files` names in `max_bytes` (150 long paths once made a 582 KB prompt), the
    project's own before those of installed packages and build output (a .venv's
    files filled the list of a project without git)."""
    from lathe.tools.vendored import inside

    ordered = sorted(files, key=lambda path: (inside(path), path))
    shown: list[str] = []
    size = 0
    for path in ordered[:max_files]:
        size += len(path.encode()) + 1
        if size > max_bytes:
            break
        shown.append(path)
    more = len(files) - len(shown)
    tail = f"\n... and {more} more (use glob or ls)" if more else ""
    return f"Files in the workspace ({len(files)}):\n" + "\n".join(shown) + tail


def workspace_snapshot(
    workspace: Path,
    files: list[str],
    max_bytes: int,
    *,
    no_edit: Sequence[str] = (),
    no_read: Sequence[str] = (),
    leave_out: Sequence[str] = (),
    leave_out_patterns: Sequence[str] = (),
) -> str | None:
    """Every file's text when the whole workspace fits in `max_bytes`, else None.

    For a tiny project this is what the first turns would read anyway; small models
    otherwise skip the reads and edit from guesses (measured: edits of text that is not
    in the file, and calls on invented paths). All or nothing: a partial snapshot would
    steer the model towards whichever files happened to fit. Files a read rule denies,
    and files named like secrets, are never copied in; files an edit rule protects say
    so in their header (the 1.5B otherwise went straight for the test file it was
    shown last). Files whose name is one of `leave_out` (the instruction files) are
    neither copied nor counted, nor are files matching one of `leave_out_patterns`.
    """
    from lathe.policy.rules import matches_any

    files = [
        name
        for name in files
        if os.path.basename(name) not in leave_out and not matches_any(name, leave_out_patterns)
    ]
    if max_bytes <= 0 or not files:
        return None
    try:
        if sum((workspace / name).lstat().st_size for name in files) > max_bytes:
            return None
    except OSError:
        return None
    blocks = []
    size = 0  # what the snapshot adds, headers and names included, not only contents
    for name in files:
        path = _regular_file_inside(workspace, name)
        if path is None or _unreadable(workspace, path, no_read, name):
            continue
        try:
            text = path.read_bytes().decode("utf-8")
        except (OSError, UnicodeDecodeError):
            continue  # binary or another encoding: listed above, read it with the tool
        if "\0" in text:
            continue
        note = " (read-only: the user forbids changing it)" if matches_any(name, no_edit) else ""
        block = f"----- {name}{note} -----\n{text.rstrip()}\n"
        size += len(block.encode()) + 1
        if size > max_bytes:
            return None
        blocks.append(block)
    if not blocks:
        return None
    return (
        "The workspace is small, so here is every text file as it was when this run "
        "started (after you change a file, read it again instead of trusting this copy):"
        "\n\n" + "\n".join(blocks) + _SNAPSHOT_END
    )


def _regular_file_inside(workspace: Path, name: str) -> Path | None:
    """`workspace/name` when it is a regular file inside the workspace (symlinks
    resolved), else None: a named pipe would block the prompt, and a link may point at
    a file the user never meant to share."""
    root = Path(os.path.realpath(workspace))
    path = Path(os.path.realpath(workspace / name))
    try:
        regular = stat.S_ISREG(path.stat().st_mode)
    except OSError:
        return None
    return path if regular and path.is_relative_to(root) else None


def _unreadable(workspace: Path, path: Path, no_read: Sequence[str], name: str = "") -> bool:
    """Whether a read rule, or a secret-like name, covers the file by the name it is
    listed under or by the file it really is (AGENTS.md may be a link to .env)."""
    from lathe.policy.rules import matches_any

    real = os.path.relpath(path, os.path.realpath(workspace))
    return any(matches_any(n, (*no_read, *SECRET_LIKE)) for n in (name, real) if n)
