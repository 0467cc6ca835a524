"""Headless faces: plain progress lines on stderr, or every event as JSON on stdout."""

from __future__ import annotations

import contextlib
import os
import sys
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, TextIO, cast

from lathe.events import (
    AgentEvent,
    AssistantReply,
    AttemptStarted,
    ChildEvent,
    Compacted,
    Notice,
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
    json_line,
)

if TYPE_CHECKING:
    from lathe.types import Usage
from lathe.exec.terminal import visible_text
from lathe.plural import plural, some_of

_VERIFY = "verify"  # the elapsed-time key of the verify command (tool calls use their id)
_WRITERS = frozenset({"edit", "write"})  # the tools whose finished event names the file


class ProgressPrinter:
    """One line per tool call, retry and verify; the final status and token totals.
    A call or check that runs long shows its elapsed time (`ui/elapsed.py`)."""

    def __init__(
        self,
        stream: TextIO | None = None,
        *,
        files_changed: Callable[[], bool] | None = None,
        unrecorded: Callable[[], Sequence[str]] | None = None,
    ) -> None:
        """`files_changed` says whether the run has changed a file so far; without it the
        closing lines of an unverified run assume it has. `unrecorded`: the nested
        repositories whose files checkpoints do not see (a change there is not known)."""
        from lathe.ui.elapsed import ElapsedLine

        self._out = ReaderMayLeave.around(stream or sys.stderr)
        self._started: dict[str, str] = {}
        self._elapsed = ElapsedLine(self._out)
        self._files_changed = files_changed
        self._unrecorded = unrecorded or tuple
        # The files the attempt's edits and writes changed, by their events: when its
        # checkpoints saw no change, these are files they do not keep (ignored ones).
        self._written: dict[str, None] = {}

    def __call__(self, event: AgentEvent) -> None:
        match event:
            case RunStarted(model=model, workspace=workspace):
                self._line(f"lathe: {model} in {workspace}")
            case ToolStarted(call_id=call_id):
                self._started[call_id] = event.label
                self._elapsed.start(call_id, _clip(event.label, 90))
            case ToolFinished(call_id=call_id, name=name, is_error=is_error, summary=summary):
                self._elapsed.stop(call_id)
                details = event.details
                # A write of what the file held already has no diff: it changed nothing.
                changed = details.get("created") or details.get("diff")
                if name in _WRITERS and not is_error and changed and details.get("path"):
                    self._written[str(details["path"])] = None
                label = self._started.pop(call_id, name)
                mark = "!!" if is_error else "->"
                self._line(f"  {_clip(label, 90)} {mark} {_clip(summary, 100)}")
            case AssistantReply(message=message) if message.tool_calls and message.text.strip():
                self._line(f"  . {_clip(message.text.strip().splitlines()[0], 110)}")
            case Retrying(attempt=attempt, max_attempts=total, wait_s=wait, error=error):
                self._line(f"  retry {attempt}/{total} in {wait:.1f}s: {_clip(error, 120)}")
            case Notice(level=level, message=message):
                self._line(f"lathe: {level}: {message}")
            case AttemptStarted(attempt=n, attempts=total, previous_status=status, kept=kept):
                self._written.clear()  # the workspace went back: `files_changed` did too
                kept_note = f"; kept files changed meanwhile: {', '.join(kept)}" if kept else ""
                self._line(
                    f"attempt {n}/{total}: the last one ended {status}; workspace restored, "
                    f"starting over{kept_note}"
                )
            case Compacted(tokens_before=before, tokens_after=after, reason=reason):
                self._line(
                    f"  compacted the conversation ({reason}): {before:,} -> {after:,} tokens"
                )
            case StallNudge(tool=tool, repeats=repeats):
                self._line(f"  stall: {tool} repeated {repeats} times; nudging the model")
            case VerifyStarted(command=command, baseline=baseline):
                self._line(f"  verify{' before the first turn' if baseline else ''}: {command}")
                self._elapsed.start(_VERIFY, f"verify: {_clip(command, 90)}")
            case VerifyFinished(passed=passed, output_tail=tail, baseline=b):
                self._elapsed.stop(_VERIFY)
                ended = event.how_it_ended()
                if b:
                    outcome = "passes" if passed else "fails"
                    self._line(f"  verify {outcome} before any change ({ended})")
                else:
                    self._line(f"  verify {'passed' if passed else 'failed'} ({ended})")
                if not passed and tail.strip():
                    for line in tail.strip().splitlines()[-5:]:
                        self._line(f"    | {_clip(line, 110)}")
            case RunFinished():
                self._elapsed.clear()
                self._finish(event)
            case ChildEvent(description=description, event=inner):
                self._child_line(description, inner)
            case TurnStarted() | TextDelta() | ThinkingDelta() | AssistantReply():
                pass

    def _child_line(self, description: str, event: AgentEvent) -> None:
        """A child's progress, indented under the task call that started it: its tool
        calls and its end."""
        name = _clip(description, 30)
        match event:
            case ToolFinished(name=tool, is_error=is_error, summary=summary):
                mark = "!!" if is_error else "->"
                self._line(f"    [{name}] {tool} {mark} {_clip(summary, 90)}")
            case RunFinished(status=status, turns=turns, reason=reason):
                why = f": {_clip(reason, 80)}" if reason else ""
                self._line(f"    [{name}] {status.value} after {plural(turns, 'turn')}{why}")
            case ChildEvent(description=inner_name, event=inner):
                self._child_line(f"{name} > {inner_name}", inner)

    def _finish(self, event: RunFinished) -> None:
        spent = spend_text(event.turns, event.usage, event.cost_usd)
        self._line(f"status: {event.status.value} after {spent}")
        if event.error:  # a failure the user acts on: one line, in lathe's error style
            self._line(f"lathe: {event.reason or event.error.message}")
        elif event.reason:
            self._line(f"  reason: {event.reason}")
        if event.status.value == "out_of_budget":
            self._line(
                "  to go on: lathe run --continue, with a larger --max-cost, --max-tokens "
                "or --timeout"
            )
        nested = self._unrecorded()
        if event.status.value == "unverified":
            self._evidence(event, nested_repos=bool(nested))
        if nested:
            self._line(
                f"  files inside nested git repositories ({some_of(nested, 5)}) are in no "
                "checkpoint: lathe cannot tell whether the run changed them, and undo cannot "
                "bring them back"
            )

    def _evidence(self, event: RunFinished, *, nested_repos: bool) -> None:
        """What an unverified run's last check shows, with or without a change to check
        (which `nested_repos` leave unknown)."""
        evidence = event.evidence
        if self._files_changed is not None and not self._files_changed() and not nested_repos:
            ran = f"; `{evidence.command}` {evidence.outcome()}" if evidence else ""
            if self._written:  # an ignored `.env` it edited: not "no file was changed"
                them = "it" if len(self._written) == 1 else "them"
                self._line(
                    f"  changed only files that checkpoints do not keep "
                    f"({some_of(list(self._written), 5)}): undo cannot bring {them} back{ran}"
                )
            else:
                self._line(f"  no file was changed{ran}")
        elif evidence:
            self._line(
                f"  evidence: `{evidence.command}` {evidence.outcome()} "
                "after the last edit (lathe ran no check of its own; use --verify)"
            )
        else:
            self._line("  no test was run after the last edit; use --verify CMD to check")

    def _line(self, text: str) -> None:
        self._elapsed.write(visible_text(text))  # a model's escape codes: shown, not obeyed


class ReaderMayLeave:
    """A text stream whose reader may go away (`lathe run 2>&1 | head -1`). When a write
    or flush finds the pipe closed, the stream's descriptor is pointed at /dev/null, so
    that line and every later one, lathe's and the interpreter's at exit, go nowhere
    and the run goes on to its end and its exit code as if they were read."""

    def __init__(self, stream: TextIO) -> None:
        self._stream = stream

    @classmethod
    def around(cls, stream: TextIO) -> TextIO:
        """`stream` so wrapped, typed as the stream it stands for."""
        return cast(TextIO, cls(stream))

    def write(self, text: str) -> int:
        try:
            return self._stream.write(text)
        except BrokenPipeError:
            self._nowhere()
            return len(text)

    def flush(self) -> None:
        try:
            self._stream.flush()
        except BrokenPipeError:
            self._nowhere()

    def __getattr__(self, name: str) -> object:  # isatty, fileno: the stream's own
        return getattr(self._stream, name)

    def _nowhere(self) -> None:
        devnull = os.open(os.devnull, os.O_WRONLY)
        try:
            os.dup2(devnull, self._stream.fileno())
        finally:
            os.close(devnull)


class JsonPrinter:
    """`--json`: each event as one JSON object per line on stdout."""

    def __init__(self, stream: TextIO | None = None) -> None:
        stream = stream or sys.stdout
        # JSON Lines are UTF-8: under an ASCII locale the first "é" ended the run.
        if (getattr(stream, "encoding", None) or "").lower().replace("-", "") != "utf8":
            with contextlib.suppress(AttributeError, ValueError, OSError):
                stream.reconfigure(encoding="utf-8")  # type: ignore[attr-defined]
        self._out = ReaderMayLeave.around(stream)

    def __call__(self, event: AgentEvent) -> None:
        self._out.write(json_line(event) + "\n")
        self._out.flush()


def spend_text(turns: int, usage: Usage, cost_usd: float | None) -> str:
    """`3 turns; tokens 1,200 in, 300 out[; 800 cached][; cost $0.0123]`: what a run (or
    every attempt of one) spent, as its closing lines say it."""
    return (
        f"{plural(turns, 'turn')}; tokens {usage.input_tokens:,} in, {usage.output_tokens:,} out"
        + (f"; {usage.cache_read_tokens:,} cached" if usage.cache_read_tokens else "")
        + (f"; cost {_dollars(cost_usd)}" if cost_usd is not None else "")
    )


def _dollars(amount: float) -> str:
    return "<$0.0001" if 0 < amount < 0.0001 else f"${amount:.4f}"


def _clip(text: str, width: int) -> str:
    text = visible_text(" ".join(text.split()))
    return text if len(text) <= width else text[: width - 3] + "..."
