"""What a parent receives from a child: the result contract of the `task` tool.

A child's end is never softened on the way up. Its status says how it ended; its
answer is what it said (capped, with the file that holds all of it); `files` are what it
changed, as line counts; `evidence` is the check that backs its claim, if any; and
`merge` says whether its changes reached the parent's workspace. `for_model` is the
text the parent's model reads, and says plainly when a claim was not verified.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum
from pathlib import Path

from lathe.events import Evidence, RunStatus
from lathe.plural import plural, some_of
from lathe.subagents.worktree import FileStat
from lathe.types import Usage

ANSWER_MAX_CHARS = 4_000


class ChildStatus(StrEnum):
    COMPLETED = "completed"  # said it was done; nothing lathe ran checked it
    VERIFIED = "verified"  # the verify command passed after its last change
    FAILED = "failed"  # the verify command still failed when its turns ran out
    STUCK = "stuck"  # it repeated itself or claimed done without acting
    OUT_OF_BUDGET = "out_of_budget"  # its turns, tokens, money or time ran out
    INTERRUPTED = "interrupted"  # Ctrl-C, or the parent stopped
    ERROR = "error"  # the model endpoint or lathe itself failed


_PATCH_SHOWN_CHARS = 6_000  # of a patch that was not applied, in the parent's result
_FROM_RUN = {
    RunStatus.VERIFIED: ChildStatus.VERIFIED,
    RunStatus.UNVERIFIED: ChildStatus.COMPLETED,
    RunStatus.FAILED: ChildStatus.FAILED,
    RunStatus.STUCK: ChildStatus.STUCK,
    RunStatus.MAX_TURNS: ChildStatus.OUT_OF_BUDGET,
    RunStatus.OUT_OF_BUDGET: ChildStatus.OUT_OF_BUDGET,
    RunStatus.PROVIDER_ERROR: ChildStatus.ERROR,
    RunStatus.INTERRUPTED: ChildStatus.INTERRUPTED,
}


def child_status(run: RunStatus) -> ChildStatus:
    return _FROM_RUN[run]


@dataclass(frozen=True)
class Merge:
    """What became of the child's changes: `applied` to the parent's workspace (as one
    checkpoint, `checkpoint`), or not, with `reason`; `patch_file` holds them either way.
    Not applied for a clash with the workspace's own changes, `marked` is the patch that
    applies them to the workspace as it was then, the clashes between conflict markers."""

    applied: bool
    patch_file: Path | None = None
    checkpoint: int | None = None
    reason: str = ""
    marked: Path | None = None


@dataclass(frozen=True)
class ChildResult:
    child_id: str
    description: str
    status: ChildStatus
    answer: str
    answer_file: Path | None = None  # the whole answer, when `answer` was cut
    reason: str = ""  # why it ended, in words
    files: tuple[FileStat, ...] = ()
    left_behind: tuple[str, ...] = ()  # files no patch carries (`worktree.Changes`)
    evidence: Evidence | None = None
    merge: Merge | None = None  # None: nothing changed, or a read-only child
    # Set when its changes could not be read back: its folder, kept with them.
    kept_in: Path | None = None
    usage: Usage = field(default_factory=Usage)
    cost_usd: float | None = None
    turns: int = 0
    session_path: Path | None = None

    @property
    def is_error(self) -> bool:
        """Whether the parent's model should read this as a failed call."""
        return self.status not in (ChildStatus.COMPLETED, ChildStatus.VERIFIED) or (
            self.merge is not None and not self.merge.applied
        )

    def for_model(self) -> str:
        lines = [f"Subagent {self.child_id} ({self.description}): {self.status.value}"]
        if self.reason:
            lines.append(f"Why it ended: {self.reason}")
        lines.append(_claim(self))
        lines += _changes(self)
        lines.append(
            f"Usage: {plural(self.turns, 'turn')}, "
            f"{self.usage.input_tokens + self.usage.cache_read_tokens} tokens in, "
            f"{self.usage.output_tokens} out"
        )
        answer = self.answer.strip() or "(no answer)"
        kept = self.answer_file
        more = f"\n[cut here; the whole answer is kept for the user in {kept}]" if kept else ""
        lines.append(f"Its answer:\n{answer}{more}")
        return "\n".join(lines)


def _claim(result: ChildResult) -> str:
    if result.status is ChildStatus.VERIFIED:
        return "Checked: lathe ran the verify command after its last change and it passed."
    evidence = result.evidence
    if evidence is not None:
        return (
            f"Not verified by lathe: after its last change it ran `{evidence.command}`, "
            f"which {evidence.outcome()}. Check its work before relying on it."
        )
    return "Not verified: no check ran after its last change. Check its work before relying on it."


def _changes(result: ChildResult) -> list[str]:
    lines = _left_behind(result.left_behind)
    if result.kept_in is not None:
        return [
            "Files changed: unknown: lathe could not read its changes back. Its folder, "
            f"with them, is kept for the user in {result.kept_in}.",
            *lines,
        ]
    if not result.files:
        return ["Files changed: none.", *lines]
    return [*_merged(result), *lines]


def _left_behind(paths: tuple[str, ...]) -> list[str]:
    if not paths:
        return []
    return [f"{left_behind(paths)}. Make them here if they are needed."]


def left_behind(paths: tuple[str, ...]) -> str:
    """The files no patch of a child's carries (`worktree.Changes.left_behind`), gone
    with its folder: one sentence, for the model's result and the user's notice alike."""
    return (
        "Files it made at paths your ignore rules ignore, changed inside a submodule, or "
        "that git could not take (a path git refuses, a file it cannot read) were not "
        f"brought back (they were only in its copy, now removed): {some_of(paths, 10)}"
    )


def one_line(text: str) -> str:
    """`text` (git's own words often span lines) on one line."""
    return " ".join(line.strip() for line in text.splitlines() if line.strip())


def _merged(result: ChildResult) -> list[str]:
    stats = ", ".join(_stat(f) for f in result.files)
    lines = [f"Files changed: {stats}"]
    merge = result.merge
    if merge is None:
        return lines
    if merge.applied and merge.checkpoint is not None:
        lines.append(
            f"Its changes are applied to your workspace as checkpoint #{merge.checkpoint} "
            "(`lathe undo` reverts)."
        )
    elif merge.applied:  # a child's own child: its parent's changes land as one later
        lines.append("Its changes are applied to your workspace.")
    else:
        # Shown, not pointed at: the patch file lies outside the workspace, where neither
        # read nor a sandboxed command reaches.
        lines.append(
            f"Its changes were NOT applied: {merge.reason}. Its patch (kept for the user in "
            f"{merge.patch_file}), for you to make the changes where they still fit:"
        )
        lines.append(_patch_text(merge.patch_file))
    return lines


def _patch_text(path: Path | None) -> str:
    try:
        text = path.read_text(encoding="utf-8", errors="replace") if path else ""
    except OSError:
        text = ""
    if len(text) > _PATCH_SHOWN_CHARS:
        text = text[:_PATCH_SHOWN_CHARS] + "\n[the rest of the patch is cut here]"
    return f"```diff\n{text.rstrip()}\n```" if text else "(the patch could not be read)"


def _stat(stat: FileStat) -> str:
    if stat.added is None:
        return f"{stat.path} (binary)"
    return f"{stat.path} (+{stat.added} -{stat.deleted})"


def capped_answer(answer: str, spill: Path) -> tuple[str, Path | None]:
    """`answer`, cut to `ANSWER_MAX_CHARS` with the whole written to `spill` when longer."""
    if len(answer) <= ANSWER_MAX_CHARS:
        return answer, None
    spill.parent.mkdir(parents=True, exist_ok=True)
    spill.write_text(answer, encoding="utf-8")
    return answer[:ANSWER_MAX_CHARS], spill
