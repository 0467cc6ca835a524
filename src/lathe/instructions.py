"""Instruction files: AGENTS.md (or CLAUDE.md, or the names configured) the user wrote
for agents, found and read within one budget.

    found = Instructions(workspace, names=["AGENTS.md", "CLAUDE.md"], max_bytes=32768,
                         window_tokens=8192)
    found.standing()          # the user file, then the repository root down to workspace
    found.below(path)         # files in the folders between the workspace and `path`
                              # not read yet (each folder is looked at once)

Where they come from, in the order they are joined:
- the user's file, `AGENTS.md` beside lathe's user config file;
- each folder from the repository root (the nearest folder above the workspace holding
  `.git`; the workspace itself when there is none) down to the workspace: in each, the
  first of `names` that exists (CLAUDE.md only where there is no AGENTS.md);
- folders below the workspace, when a tool first works in them (`NestedInstructions`,
  an `after_tool` hook that appends the text to that tool's result).

Only regular files are read, never a link that leads out of the repository, nor a
file a read rule denies or named like a secret. All of them share one budget:
`max_bytes` (the setting), and no more than `WINDOW_SHARE` of the model's window
(`window_tokens`, at about 3 bytes a token). A file that does not fit whole is cut at a
line, the text says where, and `notes` records it for a notice naming the limit that
cut it; so does a file skipped for where it leads (a link out of the repository, one
that leads nowhere, one that cannot be read) or for what it holds (not text): left out
without a word, it looked read. Text is read as the file tools read it
(`tools.files.decode_text`: UTF-16 with its BOM, what PowerShell's `echo >` writes, a
UTF-8 BOM, CRLF).
"""

from __future__ import annotations

import os
import stat
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from lathe.hooks.base import AgentHooks
from lathe.patterns import SECRET_LIKE
from lathe.tools.base import ToolOutput, ToolRegistry

# Of the model's window, what the instruction files may take at most: the system prompt
# must leave an 8,192-token window room to work (a 25 KB AGENTS.md filled it, and no
# request of the run was answered); a 128k window reaches `max_bytes` first.
WINDOW_SHARE = 1 / 8


@dataclass(frozen=True)
class InstructionFile:
    label: str  # how the model and the user see it named: "AGENTS.md", "sub/AGENTS.md"
    path: Path
    size: int  # bytes on disk
    text: str  # what the model gets: the file, or its start when the budget cut it
    cut: bool = False


def user_instructions_path(environ: dict[str, str] | None = None) -> Path:
    """The user's own instruction file: AGENTS.md beside the user config file."""
    from lathe.config.loader import user_config_path

    return user_config_path(environ).parent / "AGENTS.md"


@dataclass
class Instructions:
    """The instruction files of one run and the budget they share (see the module)."""

    workspace: Path
    names: Sequence[str] = ("AGENTS.md", "CLAUDE.md")
    max_bytes: int = 32 * 1024
    no_read: Sequence[str] = ()
    user_file: Path | None = None
    window_tokens: int | None = None  # the model's window; None: `max_bytes` alone
    loaded: list[InstructionFile] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)  # a line per file cut or skipped
    _seen: set[Path] = field(default_factory=set, init=False, repr=False)  # folders looked at
    _spent: int = field(default=0, init=False)  # bytes of the budget used

    def __post_init__(self) -> None:
        self.workspace = Path(os.path.realpath(self.workspace))
        from lathe.config.loader import project_root

        self._root = Path(os.path.realpath(project_root(self.workspace)))

    @property
    def budget(self) -> int:
        """Bytes the instruction files of the run may take in all."""
        return min(self.max_bytes, self._window_bytes)

    @property
    def _window_bytes(self) -> int:
        if self.window_tokens is None:
            return self.max_bytes
        return int(self.window_tokens * WINDOW_SHARE * 3)  # about 3 bytes a token

    def standing(self) -> list[InstructionFile]:
        """The user file, then one file per folder from the repository root down to the
        workspace, in that order. Call once, before `below`."""
        found: list[InstructionFile] = []
        if self.user_file is not None:
            found += self._take(self.user_file, _home_label(self.user_file), within=None)
        folders = [self.workspace, *self.workspace.parents]
        folders = folders[: folders.index(self._root) + 1] if self._root in folders else folders[:1]
        for folder in reversed(folders):
            self._seen.add(folder)
            found += self._first_in(folder, within=self._root)
        return found

    def below(self, target: str | Path) -> list[InstructionFile]:
        """Files in the folders from just below the workspace down to `target` (a
        workspace path a tool works on, relative or absolute) that were not looked at
        yet, outermost first. [] for a target outside the workspace."""
        path = Path(os.path.realpath(self.workspace / target))
        if not path.is_relative_to(self.workspace) or path == self.workspace:
            return []
        folder = path if path.is_dir() else path.parent
        chain = []
        while folder != self.workspace and folder.is_relative_to(self.workspace):
            chain.append(folder)
            folder = folder.parent
        found: list[InstructionFile] = []
        for folder in reversed(chain):
            if folder in self._seen or not folder.is_dir():
                continue  # a folder not made yet (`write a/b/new.py`) is looked at later
            self._seen.add(folder)
            found += self._first_in(folder, within=self.workspace)
        return found

    def _first_in(self, folder: Path, *, within: Path) -> list[InstructionFile]:
        for name in self.names:  # the first that can be read: a skipped AGENTS.md (a
            candidate = folder / name  # link out of the repository) hid CLAUDE.md
            if os.path.lexists(candidate):
                label = os.path.relpath(candidate, self.workspace)
                taken = self._take(candidate, label, within=within)
                if taken:
                    return taken
        return []

    def _take(self, path: Path, label: str, *, within: Path | None) -> list[InstructionFile]:
        """`path` read and counted against the budget; [] when it may not be read."""
        real = Path(os.path.realpath(path))
        try:
            info = real.stat()
        except OSError as exc:
            if os.path.islink(path):
                self.notes.append(f"{label} skipped: it is a link to {real}, which is not there")
            elif not isinstance(exc, FileNotFoundError):
                self.notes.append(f"{label} skipped: it cannot be read ({exc.strerror})")
            return []
        if not stat.S_ISREG(info.st_mode):
            return []
        if within is not None and not real.is_relative_to(within):
            self.notes.append(
                f"{label} skipped: it is a link to {real}, outside the repository (copy the "
                "file in, or put it in the user's AGENTS.md)"
            )
            return []
        if within is not None and self._denied(path):
            return []  # the user's own rule, or a secret's name: said by neither
        # No more than the budget left can be shown: a 3 GB file took 56 s and 6 GB to read.
        # Twice that, as UTF-16 takes two bytes for a character UTF-8 writes in one.
        try:
            with real.open("rb") as handle:
                raw = handle.read(2 * max(self.budget - self._spent, 0) + 4)
        except OSError as exc:
            self.notes.append(f"{label} skipped: it cannot be read ({exc.strerror})")
            return []
        text = _decoded(raw, whole=len(raw) >= info.st_size)
        if text is None:
            self.notes.append(f"{label} skipped: it is not text (a binary file?)")
            return []
        text = text.strip()
        if not text:
            return []
        text, cut = self._fit(label, text, info.st_size)
        found = InstructionFile(label=label, path=path, size=info.st_size, text=text, cut=cut)
        self.loaded.append(found)
        return [found]

    def _fit(self, label: str, text: str, size: int) -> tuple[str, bool]:
        """`text` (the start of a file of `size` bytes) counted against the budget: whole,
        or cut at its last line that fits (with a line saying so, and one in `notes`); and
        whether it was cut."""
        data = text.encode()
        left = max(self.budget - self._spent, 0)
        self._spent += min(len(data), left)
        if len(data) <= left:
            return text, False
        total = max(size, len(data))  # read only as far as the budget goes
        kept = data[:left].decode("utf-8", errors="ignore")
        kept = kept[: kept.rfind("\n") + 1]
        shown = len(kept.encode())
        share = self._share()
        if not kept:
            self.notes.append(f"{label} was left out ({total:,} bytes): {share}")
            return f"[{label} is left out, {total:,} bytes: the budget is spent]", True
        self.notes.append(f"{label} was cut after {shown:,} of its {total:,} bytes: {share}")
        marker = f"[{label} is cut here, {shown:,} of {total:,} bytes: the budget is spent]"
        return kept + marker, True

    def _share(self) -> str:
        """What bounds the budget, and the setting that raises it."""
        if self._window_bytes < self.max_bytes:
            return (
                f"the instruction files of a run share {self.budget:,} bytes, "
                f"{WINDOW_SHARE:.1%} of the model's {self.window_tokens:,}-token window "
                "(a larger window gets more: the model's context_window, local.ctx_size "
                "for the local model)"
            )
        return (
            f"the instruction files of a run share {self.max_bytes:,} bytes "
            "(memory.instructions_max_bytes)"
        )

    def _denied(self, path: Path) -> bool:
        """Whether a read rule or a secret-like name covers the file, by the name it was
        found under or by the file it really is (AGENTS.md may be a link to .env)."""
        from lathe.policy.rules import matches_any, workspace_names

        names = {*workspace_names(self.workspace, path), *workspace_names(self._root, path)}
        names.discard(".")
        return any(matches_any(n, (*self.no_read, *SECRET_LIKE)) for n in names)


def _decoded(raw: bytes, *, whole: bool) -> str | None:
    """The text of a file's first bytes, read as the file tools read it (UTF-16 and a
    BOM included, CRLF as LF, a stray byte as U+FFFD); None for a binary file. A read
    that stopped inside a character (`whole` false) is read up to it: the cut character
    alone had made a UTF-8 file read as cp1252, or a UTF-16 one as no text."""
    from lathe.tools.files import decode_text, printable

    ends = [] if whole else [end for end in range(len(raw), len(raw) - 4, -1) if end > 0]
    for end in ends:
        decoded = decode_text(raw[:end])
        if decoded is not None and decoded.errors == "strict" and decoded.encoding[:3] == "utf":
            return printable(decoded.text)
    decoded = decode_text(raw)
    return None if decoded is None else printable(decoded.text)


def _home_label(path: Path) -> str:
    home = Path.home()
    return f"~/{path.relative_to(home)}" if path.is_relative_to(home) else str(path)


def prompt_section(files: Sequence[InstructionFile]) -> str | None:
    """The instruction files as one part of the system prompt, each named."""
    if not files:
        return None
    blocks = [f"----- {f.label} -----\n{f.text}" for f in files]
    return (
        "Instructions the user wrote for agents, from the most general to the most "
        "specific (a later file wins where they disagree):\n\n" + "\n\n".join(blocks)
    )


def nested_message(found: InstructionFile) -> str:
    """How a file found below the workspace reaches the model, after a tool's result."""
    folder = os.path.dirname(found.label) or "."
    return (
        f"[Instructions from {found.label}, for the work under {folder}/; follow them "
        f"there:]\n{found.text}"
    )


class NestedInstructions(AgentHooks):
    """An `after_tool` hook: when a tool's path argument (`Tool.path_argument`) first
    reaches a folder below the workspace, the instruction file of each folder on the way
    is appended to that tool's result, once a run. Everything it appended is kept for
    `kept_verbatim`, so a compaction carries it over word for word."""

    def __init__(
        self, instructions: Instructions, tools: ToolRegistry, on_cut: Callable[[str], None]
    ) -> None:
        """`on_cut` receives the line saying where the budget cut a file."""
        self._instructions = instructions
        self._tools = tools
        self._on_cut = on_cut
        self._appended: list[str] = []

    @property
    def instructions(self) -> Instructions:
        """The run's instruction files: `loaded` lists every one read so far, in order."""
        return self._instructions

    async def after_tool(
        self, name: str, arguments: dict[str, Any], output: ToolOutput
    ) -> ToolOutput:
        tool = self._tools.get(name)
        target = arguments.get(tool.path_argument) if tool and tool.path_argument else None
        if not isinstance(target, str) or not target.strip():
            return output
        notes_before = len(self._instructions.notes)
        try:
            found = self._instructions.below(target)
        except (OSError, ValueError):
            return output
        for cut in self._instructions.notes[notes_before:]:
            self._on_cut(cut)
        if not found:
            return output
        texts = [nested_message(f) for f in found]
        self._appended += texts
        from dataclasses import replace

        return replace(output, content="\n\n".join([output.content.rstrip(), *texts]))

    def kept_verbatim(self) -> list[str]:
        return list(self._appended)
