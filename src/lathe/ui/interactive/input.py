"""The input line: prompt_toolkit editing, history, completion and `@path` references.

Keys: Enter sends; Alt-Enter, Ctrl-J and Shift-Enter (in terminals that send a distinct
sequence for it: xterm's modifyOtherKeys or the kitty protocol) insert a newline;
Ctrl-Z suspends lathe to the shell that started it (nothing without job control);
Ctrl-R searches the history, which is kept per workspace under
`$LATHE_HOME/history/`. Tab completes `/commands` and `@path` references; a reference
to a workspace file attaches the file's content to the message when it is sent, unless
the permission rules deny the read tool that file.
Ctrl-C, Esc and Ctrl-D are bound by the app (see `KeyActions`).
"""

from __future__ import annotations

import dataclasses
import os
import re
import subprocess
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from lathe.errors import ToolError
from lathe.home import lathe_home, private_folder, project_slug

if TYPE_CHECKING:
    from prompt_toolkit import PromptSession

    from lathe.policy.gate import Policy

# `@path`, or `@"a path with spaces"` (as completion writes one).
_REFERENCE = re.compile(r'(?<![\w@])@(?:"([^"\n]+)"|([\w./~+-]+))')
_MAX_ATTACH_BYTES = 200_000
_MAX_INDEX = 20_000
_SKIP_DIRS = {".git", ".lathe", "node_modules", "__pycache__", ".venv", "venv", ".mypy_cache"}


def history_file(workspace: Path) -> Path:
    return lathe_home() / "history" / f"{project_slug(workspace)}.txt"


def _private_history(workspace: Path) -> Path:
    """The workspace's history file, made readable by lathe's user alone, as a session
    is: it holds every line typed (created 0644 in a 0755 folder, it was open to every
    user of the machine). One an older lathe made is tightened."""
    path = history_file(workspace)
    private_folder(path.parent)
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
    try:
        os.fchmod(fd, 0o600)
    finally:
        os.close(fd)
    return path


@dataclass
class KeyActions:
    """What the app does for the keys it owns. Each returns nothing; `interrupt_active`
    says whether Esc should interrupt (a turn is running)."""

    ctrl_c: Callable[[Any], None]
    escape: Callable[[Any], None]
    interrupt_active: Callable[[], bool]


def workspace_files(workspace: Path) -> list[str]:
    """Files a reference may name: git's view when the workspace is a repository
    (tracked and untracked, minus ignored), otherwise a bounded walk."""
    try:
        listed = subprocess.run(
            ["git", "ls-files", "--cached", "--others", "--exclude-standard", "-z"],
            cwd=workspace,
            capture_output=True,
            timeout=5,
            check=True,
        )
        names = [n for n in listed.stdout.decode("utf-8", "replace").split("\0") if n]
        return names[:_MAX_INDEX]
    except (OSError, subprocess.SubprocessError):
        pass
    found: list[str] = []
    for root, dirs, files in os.walk(workspace):
        dirs[:] = sorted(d for d in dirs if d not in _SKIP_DIRS and not d.startswith("."))
        for name in sorted(files):
            found.append(os.path.relpath(os.path.join(root, name), workspace))
            if len(found) >= _MAX_INDEX:
                return found
    return found


def expand_references(
    text: str, workspace: Path, policy: Policy
) -> tuple[str, list[str], list[str]]:
    """The message with the content of each `@path` workspace file appended.

    Returns (message, attached paths, problems). A reference that is not a readable
    text file inside the workspace, or that `policy` refuses the read tool (a rule
    denies reading it), is left as typed and reported in `problems`. A read a rule asks
    about is attached: the person it would ask is the one sending it.
    """
    attached: list[str] = []
    problems: list[str] = []
    blocks: list[str] = []
    root = workspace.resolve()
    if policy.tools.get("read") is None:  # a profile without it: its rules still hold
        from lathe.tools.base import ToolRegistry
        from lathe.tools.read import ReadTool

        policy = dataclasses.replace(policy, tools=ToolRegistry([ReadTool()]))
    for match in _REFERENCE.finditer(text):
        name = match.group(1) or match.group(2).rstrip(".,;:")
        if name in attached:
            continue
        path = (root / name).resolve()
        if not path.is_relative_to(root):
            problems.append(f"@{name} is outside the workspace; not attached")
            continue
        if not path.is_file():
            if path.exists() or "/" in name or "." in name:
                problems.append(f"@{name} is not a file in the workspace; not attached")
            continue
        try:  # the model's read of it is judged so, whatever the spelling (a link to it)
            decision = policy.decide("read", {"path": name})
        except ToolError as exc:
            problems.append(f"@{name} is not attached: {exc}")
            continue
        if decision.action == "deny":
            problems.append(f"@{name} is not attached: {decision.reason}")
            continue
        try:  # no further than is attached: a 3 GB log was read whole first
            with path.open("rb") as file:
                data = file.read(_MAX_ATTACH_BYTES + 1)
        except OSError as exc:
            problems.append(f"@{name} cannot be read ({exc.strerror or exc}); not attached")
            continue
        if b"\0" in data[:8192]:
            problems.append(f"@{name} is a binary file; not attached")
            continue
        content = data[:_MAX_ATTACH_BYTES].decode("utf-8", "replace")
        note = (
            "\n[... cut: the file is longer; read it with the read tool]"
            if len(data) > _MAX_ATTACH_BYTES
            else ""
        )
        blocks.append(f'<file path="{name}">\n{content}{note}\n</file>')
        attached.append(name)
    if not blocks:
        return text, attached, problems
    return text + "\n\n" + "\n\n".join(blocks), attached, problems


def _completer(commands: Callable[[], Sequence[tuple[str, str]]], workspace: Path) -> Any:
    from prompt_toolkit.completion import Completer, Completion

    index: list[str] = []

    class _LatheCompleter(Completer):
        def get_completions(self, document: Any, complete_event: Any) -> Iterable[Completion]:
            before = document.text_before_cursor
            if before.startswith("/") and " " not in before:
                for name, help_text in commands():
                    if name.startswith(before):
                        yield Completion(name, -len(before), display_meta=help_text)
                return
            word = document.get_word_before_cursor(WORD=True)
            if not word.startswith("@"):
                return
            if not index:
                index.extend(workspace_files(workspace))
            typed = word[1:]
            starts = [p for p in index if p.startswith(typed)]
            contains = [p for p in index if typed and typed in p and p not in starts]
            for path in (starts + contains)[:50]:
                spelled = f'@"{path}"' if " " in path else "@" + path
                yield Completion(spelled, -len(word), display=path)

    return _LatheCompleter()


def _register_shift_enter() -> None:
    from prompt_toolkit.input.ansi_escape_sequences import ANSI_SEQUENCES
    from prompt_toolkit.keys import Keys

    for sequence in ("\x1b[13;2u", "\x1b[27;2;13~", "\x1b[13;3u", "\x1b[27;3;13~"):
        ANSI_SEQUENCES.setdefault(sequence, (Keys.Escape, Keys.ControlM))


def _job_control() -> bool:
    """Whether a shell can start lathe again once Ctrl-Z stops it: a job-control shell
    runs each job in a process group of its own, not the session's. Otherwise (lathe
    the session's leader, or in its group) the stop would be ignored or would last."""
    try:
        return os.getpgrp() != os.getsid(0)
    except OSError:
        return False


def build_prompt(
    workspace: Path,
    *,
    message: Callable[[], Any],
    toolbar: Callable[[], Any],
    commands: Callable[[], Sequence[tuple[str, str]]],
    actions: KeyActions,
) -> PromptSession[str]:
    from prompt_toolkit import PromptSession
    from prompt_toolkit.filters import Condition
    from prompt_toolkit.history import FileHistory, InMemoryHistory
    from prompt_toolkit.key_binding import KeyBindings

    _register_shift_enter()
    bindings = KeyBindings()

    @bindings.add("enter")
    def _send(event: Any) -> None:
        buffer = event.current_buffer
        state = buffer.complete_state
        if state is not None and state.current_completion is not None:
            buffer.apply_completion(state.current_completion)
            return
        buffer.validate_and_handle()

    @bindings.add("escape", "enter")
    @bindings.add("c-j")
    def _newline(event: Any) -> None:
        event.current_buffer.insert_text("\n")

    @bindings.add("c-c")
    def _ctrl_c(event: Any) -> None:
        actions.ctrl_c(event)

    @bindings.add("escape", filter=Condition(actions.interrupt_active))
    def _escape(event: Any) -> None:
        actions.escape(event)

    @bindings.add("c-z")
    def _suspend(event: Any) -> None:
        # Unbound, the key put a raw \x1a in the message.
        if _job_control():
            event.app.suspend_to_background()  # drawn again after `fg`

    history: Any
    try:
        history = FileHistory(str(_private_history(workspace)))
    except OSError:
        history = InMemoryHistory()

    session: PromptSession[str] = PromptSession(
        message=message,
        multiline=True,
        history=history,
        completer=_completer(commands, workspace),
        complete_while_typing=True,
        key_bindings=bindings,
        bottom_toolbar=toolbar,
        refresh_interval=0.1,
        erase_when_done=True,
        enable_history_search=False,
        prompt_continuation=lambda width, line_number, wrap_count: "  ",
        # Rows kept free for the completion menu (8 by default): at 8 rows the prompt
        # gave way to "Window too small..." and the user typed blind.
        reserve_space_for_menu=3,
    )
    # A lone Esc waited out both of prompt_toolkit's delays (0.5 s for an escape sequence,
    # then 1 s for the Enter of Esc+Enter): 1.6 s to interrupt. A terminal sends the
    # bytes of a sequence, Alt+Enter's included, together.
    session.app.ttimeoutlen = 0.05
    session.app.timeoutlen = 0.2
    return session
