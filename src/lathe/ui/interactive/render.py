"""Turning agent events into terminal output for the interactive face.

Everything printed here goes into the scrollback once and is never re-drawn: the
assistant's markdown is committed a block at a time (a block ends at a blank line
outside a code fence, or at a closing fence), while the unfinished block is shown in the
live area above the prompt, which prompt_toolkit re-draws in place. That is how the
reply streams without flicker and without re-printing what was already shown.

`Status` holds what the live status line shows (spinner, phase, elapsed time, tokens);
`Renderer` is the event consumer (`emit`) given to the Agent.
"""

from __future__ import annotations

import os
import re
import sys
import time
from dataclasses import dataclass, field
from typing import IO, TYPE_CHECKING, Any

from lathe.events import (
    AgentEvent,
    AssistantReply,
    ChildEvent,
    Compacted,
    Retrying,
    RunFinished,
    RunStarted,
    StallNudge,
    TextDelta,
    ThinkingDelta,
    ToolFinished,
    ToolStarted,
    TurnStarted,
    VerifyFinished,
    VerifyStarted,
)
from lathe.exec.terminal import visible_name, visible_text
from lathe.plural import plural
from lathe.types import Usage

if TYPE_CHECKING:
    from rich.console import Console

_FENCE = re.compile(r"^\s{0,3}(`{3,}|~{3,})")
_ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")
_TRAILING_SPACE = re.compile(r" +((?:\x1b\[[0-9;]*m)*)$")
_DIFF_LINES = 40
_OUTPUT_LINES = 6


def unicode_ok(stream: IO[str] | None = None) -> bool:
    encoding = (getattr(stream or sys.stdout, "encoding", None) or "").lower()
    return encoding.replace("-", "").startswith("utf")


@dataclass(frozen=True)
class Glyphs:
    spinner: tuple[str, ...]
    bullet: str
    ok: str
    fail: str
    arrow: str
    bar: str
    ellipsis: str

    @classmethod
    def pick(cls, unicode: bool) -> Glyphs:
        if unicode:
            return cls(tuple("⠋⠙⠹⠸⠼⠴⠦⠧⠇⠏"), "●", "✓", "✗", "→", "│", "…")
        return cls(tuple("|/-\\"), "*", "ok", "x", "->", "|", "...")


class StreamBuffer:
    """Assistant text arriving in pieces, released as whole markdown blocks."""

    def __init__(self) -> None:
        self._pending = ""

    def feed(self, text: str) -> str:
        """Add text; return the prefix that is now a complete block ("" if none)."""
        self._pending += text
        cut = 0
        in_fence = False
        position = 0
        for line in self._pending.splitlines(keepends=True):
            if not line.endswith("\n"):
                break
            position += len(line)
            if _FENCE.match(line):
                in_fence = not in_fence
                if not in_fence:
                    cut = position
            elif not in_fence and not line.strip():
                cut = position
        ready, self._pending = self._pending[:cut], self._pending[cut:]
        return ready

    def flush(self) -> str:
        rest, self._pending = self._pending, ""
        return rest

    @property
    def pending(self) -> str:
        return self._pending


@dataclass
class Status:
    """What the live status line shows while a turn runs."""

    model: str
    glyphs: Glyphs
    running: bool = False
    phase: str = ""
    started: float = 0.0
    phase_started: float = 0.0
    turn_output_chars: int = 0
    session_usage: Usage = field(default_factory=Usage)
    last_prompt_tokens: int = 0
    queued: list[str] = field(default_factory=list)

    def begin(self) -> None:
        now = time.monotonic()
        self.running, self.started, self.phase_started = True, now, now
        self.turn_output_chars = 0
        self.phase = "thinking"

    def set_phase(self, phase: str) -> None:
        self.phase, self.phase_started = phase, time.monotonic()

    def end(self) -> None:
        self.running, self.phase = False, ""

    def line(self) -> str:
        """Spinner, phase and how long the phase has run (a command's own time), with
        the turn's time beside it once they differ."""
        if not self.running:
            return ""
        now = time.monotonic()
        frame = self.glyphs.spinner[int(now * 10) % len(self.glyphs.spinner)]
        in_phase, in_turn = int(now - self.phase_started), int(now - self.started)
        elapsed = f"{in_phase}s" + (f" (turn {in_turn}s)" if in_turn > in_phase else "")
        tokens = self.turn_output_chars // 4
        return f"{frame} {self.phase} · {elapsed} · {_short(tokens)} tokens out · esc to interrupt"


def _short(n: int) -> str:
    return f"{n / 1000:.1f}k" if n >= 1000 else str(n)


def make_console(file: IO[str]) -> Console:
    from rich.console import Console

    no_color = bool(os.environ.get("NO_COLOR"))
    return Console(
        file=file,
        force_terminal=True,
        no_color=no_color,
        color_system=None if no_color else "auto",
        emoji=False,
        highlight=False,
        markup=False,
        safe_box=not unicode_ok(),
    )


class Renderer:
    """The `emit` callback of the interactive Agent."""

    def __init__(self, console: Console, status: Status) -> None:
        self.console = console
        self.status = status
        self.glyphs = status.glyphs
        self.stream = StreamBuffer()
        self.partial_reply = ""  # the text of the reply being streamed, for interrupts
        self._calls: dict[str, str] = {}
        self._printed_text = False

    # events

    def __call__(self, event: AgentEvent) -> None:
        match event:
            case RunStarted():
                pass
            case TurnStarted():
                self.partial_reply = ""
                self.status.set_phase("thinking")
            case TextDelta(text=text):
                self.partial_reply += text
                self.status.turn_output_chars += len(text)
                if self.status.phase != "writing":
                    self.status.set_phase("writing")
                self._markdown(self.stream.feed(text))
            case ThinkingDelta(text=text):
                self.status.turn_output_chars += len(text)
                if self.status.phase != "reasoning":
                    self.status.set_phase("reasoning")
            case AssistantReply(message=message):
                self._markdown(self.stream.flush())
                self.partial_reply = ""
                usage = message.usage
                self.status.session_usage = self.status.session_usage + usage
                if usage.input_tokens:
                    self.status.last_prompt_tokens = (
                        usage.input_tokens + usage.cache_read_tokens + usage.output_tokens
                    )
                if message.tool_calls:
                    self.status.set_phase("running tools")
            case ToolStarted(call_id=call_id):
                label = event.label
                self._calls[call_id] = label
                self.status.set_phase(_shown(label, 50))
            case ToolFinished():
                self._tool_line(event)
                self.status.set_phase("thinking")
            case Retrying(attempt=attempt, max_attempts=total, wait_s=wait, error=error):
                # The cut attempt's text is no part of the reply: what was not drawn yet is
                # dropped (it was glued to the next attempt's), what was is marked.
                drawn = len(self.partial_reply) > len(self.stream.flush())
                self.partial_reply = ""
                self.note(f"retry {attempt}/{total} in {wait:.1f}s: {_clip(error, 100)}", "yellow")
                if drawn:
                    self.note("(the text above was cut off with that attempt)", "yellow")
                self.status.set_phase(f"retrying ({attempt}/{total})")
            case StallNudge(tool=tool, repeats=repeats):
                self.note(f"{tool} repeated {repeats} times; nudging the model", "yellow")
            case Compacted(tokens_before=before, tokens_after=after, reason=reason):
                self.note(
                    f"context compacted ({reason}): {_short(before)} {self.glyphs.arrow} "
                    f"{_short(after)} tokens",
                    "cyan",
                )
                self.status.last_prompt_tokens = after
            case VerifyStarted(command=command):
                self.status.set_phase(f"verify: {_shown(command, 40)}")
            case VerifyFinished():
                self._verify_line(event)
            case RunFinished():
                self._markdown(self.stream.flush())
                # A reply that never finished (an error, a deadline) is no part of the
                # conversation: unmarked, its text had read as the answer.
                if self.partial_reply.strip():
                    self.partial_reply = ""
                    self.note("(the text above was cut off: the reply did not finish)", "yellow")
                self._finish_line(event)
            case ChildEvent(description=description, event=inner):
                self._child_line(description, inner)
            case _ if getattr(event, "type", "") == "notice":
                warning = getattr(event, "level", "") == "warning"
                self.note(str(getattr(event, "message", "")), "yellow" if warning else "dim")

    def _child_line(self, description: str, event: AgentEvent) -> None:
        """A subagent's live status in the status line, and its end as a line."""
        name = _shown(description, 30)
        match event:
            case ToolStarted():
                self.status.set_phase(f"[{name}] {_shown(event.label, 40)}")
            case RunFinished(status=status, turns=turns):
                self.note(f"  [{name}] {status.value} after {plural(turns, 'turn')}", "cyan")
            case ChildEvent(description=inner_name, event=inner):
                self._child_line(f"{name} > {inner_name}", inner)

    # printing helpers used by the app and the commands

    def note(self, text: str, style: str = "dim") -> None:
        """A line of lathe's, which may quote what a model or a server wrote: its control
        bytes are shown, never sent to the terminal (`visible_text`)."""
        from rich.text import Text

        self.console.print(Text(visible_text(text), style=style))

    def error(self, text: str) -> None:
        self.note(text, "bold red")

    def user_echo(self, text: str) -> None:
        from rich.text import Text

        line = Text("> ", style="bold cyan")
        line.append(visible_text(text.strip()))
        self.console.print(line)

    def diff(
        self,
        diff: str,
        limit: int | None = _DIFF_LINES,
        *,
        left_out: str = "",
        plain: bool = False,
    ) -> bool:
        """Print a coloured diff (`plain`: a text, uncoloured, indented as one); one of
        more than `limit` lines (None: no limit) as its start and its end, with how many
        lines between them are left out, and `left_out` after that (how to see them).
        Its end matters as much as its start: a 150-line write ending in `curl ... | sh`
        had shown its first lines only. Whether lines were left out."""
        from rich.text import Text

        lines = visible_text(diff.rstrip("\n")).splitlines()
        cut = limit is not None and len(lines) > limit
        tail = limit // 3 if limit is not None and cut else 0
        head = limit - tail if limit is not None and cut else len(lines)
        out = Text()
        for line in lines[:head]:
            _diff_line(out, line, plain)
        if cut:
            more = plural(len(lines) - head - tail, "line")
            out.append(f"    {self.glyphs.ellipsis} {more} left out{left_out}\n", "dim")
            for line in lines[len(lines) - tail :]:
                _diff_line(out, line, plain)
        self.console.print(out, end="", overflow="fold")
        return cut

    def markdown(self, text: str) -> None:
        """Print markdown without rich's leading blank lines or trailing padding, so
        blocks committed one at a time sit together like one document."""
        if not text.strip():
            return
        with self.console.capture() as captured:
            markdown = _markdown(visible_text(text))
            self.console.print(markdown)
        lines = [_TRAILING_SPACE.sub(r"\1", line) for line in captured.get().split("\n")]
        while lines and not _ANSI.sub("", lines[0]).strip():
            lines.pop(0)
        while lines and not _ANSI.sub("", lines[-1]).strip():
            lines.pop()
        self.console.file.write("\n".join(lines) + "\n")
        self.console.file.flush()

    def live_tail(self, max_lines: int = 4) -> list[str]:
        """The unfinished block of the reply being streamed, for the live area."""
        lines = visible_text(self.stream.pending).splitlines()
        return lines[-max_lines:]

    # private

    def _markdown(self, text: str) -> None:
        if not text.strip():
            return
        if self._printed_text:
            self.console.print()
        self.markdown(text)
        self._printed_text = True

    def _tool_line(self, event: ToolFinished) -> None:
        """The call's one line (its label and summary as `_shown`: the model chose them),
        with its diff or its command's last output lines under it. A command that
        exited non-zero is marked failed in yellow, a tool's error in red: the bash tool
        reports a non-zero exit as a result, not an error, and it had shown a green ✓."""
        from rich.text import Text

        label = self._calls.pop(event.call_id, event.name)
        details: dict[str, Any] = event.details
        exit_code = details.get("exit_code")
        failed = not event.is_error and isinstance(exit_code, int) and exit_code != 0
        style = "red" if event.is_error else "yellow" if failed else ""
        mark = self.glyphs.fail if event.is_error or failed else self.glyphs.ok
        line = Text(f"{self.glyphs.bullet} ", style=style or "green")
        line.append(_shown(label, 70), style="bold")
        line.append(f" {self.glyphs.arrow} {_shown(event.summary, 60)} ", style)
        line.append(f"{mark} {event.duration_ms / 1000:.1f}s", style or "dim")
        self.console.print(line, overflow="fold")
        self._printed_text = True
        if details.get("diff"):
            self.diff(str(details["diff"]))
        tail = details.get("output_tail")
        if tail:
            lines = visible_text(str(tail).rstrip("\n")).splitlines()
            shown = lines[-_OUTPUT_LINES:]
            # The tap keeps a tail; it counts every line the command wrote.
            above = int(details.get("output_lines") or len(lines)) - len(shown)
            text = Text()
            if above > 0:
                text.append(f"    {self.glyphs.ellipsis} {plural(above, 'line')} above\n", "dim")
            for row in shown:
                text.append(f"    {self.glyphs.bar} {_clip(row, 200, keep_space=True)}\n", "dim")
            self.console.print(text, end="", overflow="fold")

    def _verify_line(self, event: VerifyFinished) -> None:
        if event.baseline:
            outcome = "passes" if event.passed else f"fails ({event.how_it_ended()})"
            self.note(f"verify before any change {outcome}: {event.command}", "dim")
        elif event.passed:
            self.note(f"{self.glyphs.ok} verify passed: {event.command}", "green")
        else:
            self.note(
                f"{self.glyphs.fail} verify failed ({event.how_it_ended()}): {event.command}",
                "red",
            )
        if event.passed:
            return
        for row in event.output_tail.strip().splitlines()[-_OUTPUT_LINES:]:
            self.note(f"    {self.glyphs.bar} {_clip(row, 200, keep_space=True)}")

    def _finish_line(self, event: RunFinished) -> None:
        usage = event.usage
        style = {
            "verified": "green",
            "unverified": "dim",
            "interrupted": "yellow",
        }.get(event.status.value, "red")
        text = (
            f"{event.status.value} · {plural(event.turns, 'turn')} · "
            f"{_short(usage.input_tokens)} in, {_short(usage.output_tokens)} out"
        )
        if event.reason:
            text += f" · {event.reason}"
        self.note(text, style)
        if event.status.value == "provider_error" and event.turns <= 1:
            # The message stays in the conversation unanswered: the next one goes with it.
            # No command named: `lathe attach` draws this too, and has no /clear.
            self.note(
                "your message got no answer; it is sent again with your next one "
                "(a new conversation starts without it)",
                "yellow",
            )
        self._printed_text = False


def _diff_line(out: Any, line: str, plain: bool = False) -> None:
    if plain:
        style = ""
    elif line.startswith(("+++", "---")):
        style = "bold"
    elif line.startswith("@@"):
        style = "cyan"
    elif line.startswith("+"):
        style = "green"
    elif line.startswith("-"):
        style = "red"
    else:
        style = "dim"
    out.append("    " + line + "\n", style=style)


def _shown(text: str, width: int) -> str:
    """A string the model chose (a call's label, a path, a task's description), for
    one line of the screen: on one line, each character that is not printable written
    out (`visible_name`: escape codes, a right-to-left override, a zero-width space),
    then clipped. Raw, `touch hidden.txt #ESC[2K...● bash ls` had erased its tool line
    and drawn `● bash ls` in its place, and a path set the terminal's title."""
    return _clip(visible_name(" ".join(text.split())), width)


def _clip(text: str, width: int, *, keep_space: bool = False) -> str:
    text = text.rstrip() if keep_space else " ".join(text.split())
    return text if len(text) <= width else text[: width - 3] + "..."


def _markdown(text: str) -> Any:
    """`text` as rich Markdown, with HTML in it shown as text: rich drops HTML tokens, so
    `Vec<String>` showed as `Vec` and a `<div>` block vanished (a reply could hide words
    from the person at the terminal)."""
    from markdown_it import MarkdownIt
    from rich.markdown import Markdown

    markdown = Markdown(text, code_theme="ansi_dark", hyperlinks=False)
    parser = MarkdownIt("commonmark", {"html": False}).enable("strikethrough").enable("table")
    markdown.parsed = parser.parse(text)
    return markdown
