"""Running one reply's tool calls: parse, validate, gate, execute, report.

Consecutive read-only calls run concurrently, and so do consecutive calls of a
`concurrent` tool (`task`); anything else that may change the workspace runs alone, in
order. Records always come back in call order, one per call, so the
conversation never holds an unanswered call. What the calls mean for the run (a stall,
evidence) is for the finish handlers to judge (`agent/finish.py`).
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

from lathe.agent.finish import CallRecord
from lathe.agent.toolcalls import validate
from lathe.errors import ToolError, ToolRefusal
from lathe.events import AgentEvent, ToolFinished, ToolStarted
from lathe.llm.arguments import parse_arguments
from lathe.tools.base import (
    CURRENT_CALL,
    Params,
    Tool,
    ToolContext,
    ToolOutput,
    ToolRegistry,
)
from lathe.types import ToolCall, ToolResultMessage

if TYPE_CHECKING:
    from lathe.agent.loop import AgentDeps, Emit


@dataclass
class _Prepared:
    call: ToolCall
    tool: Tool | None
    arguments: dict[str, Any] | None
    params: Any = None
    error: str | None = None


class ToolRunner:
    def __init__(self, deps: AgentDeps, emit: Emit) -> None:
        self._deps = deps
        self._emit = emit
        # The batch in progress: the calls the faces saw start, those whose tool began to
        # run (past the gate and any approval), and the outputs of those that finished.
        # A run cut mid-batch (its time limit) answers each call from these.
        self.announced: set[str] = set()
        self.running: dict[str, float] = {}  # call id: when it began (time.monotonic)
        self.finished: dict[str, ToolOutput] = {}
        self._context = deps.tool_context  # the batch's (`_shared_room`)

    async def run_calls(
        self, turn: int, calls: Sequence[ToolCall], *, note: str = ""
    ) -> list[CallRecord]:
        """Run `calls` (gated, hooked, in groups) and return one record per call, in call
        order. `note`: how the faces label calls lathe makes itself."""
        self.announced, self.running, self.finished = set(), {}, {}
        self._context = _shared_room(self._deps.tool_context, len(calls))
        prepared = [self._prepare(call) for call in calls]
        may_change = any(item.tool is None or not item.tool.read_only for item in prepared)
        if may_change:
            await self._deps.hooks.before_changes(turn)
        outputs: list[tuple[ToolOutput, bool]] = []
        try:
            for group in _groups(prepared):
                outputs.extend(await asyncio.gather(*(self._execute(item, note) for item in group)))
        finally:  # an interrupted turn's changes must still be recorded, to be undoable
            if may_change:
                await self._deps.hooks.after_changes(turn)
        return [
            CallRecord(
                item.call,
                item.tool,
                item.arguments,
                output,
                refused=refused,
                malformed=item.error is not None,
            )
            for item, (output, refused) in zip(prepared, outputs, strict=True)
        ]

    def _prepare(self, call: ToolCall) -> _Prepared:
        tool = self._deps.tools.get(call.name)
        if tool is None:
            return _Prepared(call, None, None, error=_no_such_tool(call.name, self._deps.tools))
        parsed = parse_arguments(call.arguments)
        if parsed.value is None:
            return _Prepared(call, tool, None, error=f"{call.name}: {parsed.error}")
        params = validate(tool.parameters, tool.name, parsed.value)
        if isinstance(params, str):
            return _Prepared(call, tool, parsed.value, error=params)
        return _Prepared(call, tool, parsed.value, params=params)

    async def _execute(self, item: _Prepared, note: str) -> tuple[ToolOutput, bool]:
        call, tool = item.call, item.tool
        arguments = item.arguments or {}
        summary = tool.summarize_call(item.params) if tool and item.params is not None else ""
        self._emit(
            ToolStarted(
                call_id=call.id, name=call.name, arguments=arguments, summary=summary, note=note
            )
        )
        self.announced.add(call.id)
        started = time.monotonic()
        output, refused = await self._output_for(item, arguments)
        kept = self._deps.hooks.kept_verbatim  # asked only of an output over the cap
        output = _within_cap(_printable_output(output), self._context, kept)
        self._emit(
            ToolFinished(
                call_id=call.id,
                name=call.name,
                is_error=output.is_error,
                summary=_first_line(output.summary or output.content),
                duration_ms=(time.monotonic() - started) * 1000,
                details=output.details,
                output=output.content,
            )
        )
        self.finished[call.id] = output
        return output, refused

    async def _output_for(
        self, item: _Prepared, arguments: dict[str, Any]
    ) -> tuple[ToolOutput, bool]:
        """The call's output, and whether a hook refused it."""
        if item.error is not None or item.tool is None:
            error = ToolOutput(
                content=f"Error: {item.error}", is_error=True, summary=item.error or ""
            )
            return error, False
        hooks = self._deps.hooks
        # Each call runs in a task of its own: set, never reset. Set before the hooks so
        # an approver can tell which call it is asked about.
        CURRENT_CALL.set(item.call.id)
        verdict = await hooks.before_tool(item.tool.name, arguments)
        params = item.params
        if isinstance(verdict, ToolOutput):
            hinted = _with_refusal_hint(verdict, item.tool, params, self._context)
            return hinted, verdict.is_error
        if isinstance(verdict, dict):
            params = validate(item.tool.parameters, item.tool.name, verdict)
            if isinstance(params, str):
                bad = ToolOutput(
                    content=f"Error: a hook rewrote the arguments badly: {params}", is_error=True
                )
                return bad, False
        self.running[item.call.id] = time.monotonic()
        refused = False
        try:
            output = await item.tool.execute(params, self._context)
        except ToolError as exc:
            output = ToolOutput(content=f"Error: {exc}", is_error=True, summary=str(exc))
            refused = isinstance(exc, ToolRefusal)
        except Exception as exc:  # a tool bug must not kill a user's run; the model is told
            output = _internal_error(item.tool, exc)
        if not isinstance(output, ToolOutput):  # a plugin's bug too: it had ended the run
            wrong = TypeError(f"it returned a {type(output).__name__}, not a ToolOutput")
            output = _internal_error(item.tool, wrong)
        # Capped before the hooks: what they add is theirs to bound, and a nested
        # AGENTS.md appended to a `read` page cut a hole in the middle of the page.
        output = _within_cap(_printable_output(output), self._context)
        ran = verdict if isinstance(verdict, dict) else arguments
        output = await hooks.after_tool(item.tool.name, ran, output)
        if ran != arguments:
            shown = item.tool.summarize_call(params)
            output = _as_rewritten(
                output,
                arguments,
                ran,
                shown if shown != item.tool.summarize_call(item.params) else "",
            )
        return output, refused


def _no_such_tool(name: str, tools: ToolRegistry) -> str:
    """What a call naming no tool is told: the registered names nearest the one it
    wrote, and the tools the model is shown. Deferred ones (many MCP tools, found by a
    search tool) are counted, not named: listing 3,000 of them cost ~26 KB a mistake,
    more than the whole first request."""
    import difflib

    everything = tools.names()
    shown = [spec.name for spec in tools.specs()]
    near = difflib.get_close_matches(name, everything, n=3)
    said = f"there is no tool named {name!r}."
    if near:
        said += f" Did you mean {', '.join(near[:-1])}{' or ' if near[1:] else ''}{near[-1]}?"
    deferred = len(everything) - len(shown)
    more = f" (and {deferred} deferred ones, found by searching)" if deferred else ""
    return f"{said} Tools: {', '.join(shown)}{more}."


def _internal_error(tool: Tool, exc: Exception) -> ToolOutput:
    """What the model is told of a bug in `tool`, the error `exc` it raised or made."""
    return ToolOutput(
        content=f"Error: internal error in the {tool.name} tool: {type(exc).__name__}: {exc}",
        is_error=True,
        summary=f"internal error: {type(exc).__name__}",
    )


def _as_rewritten(
    output: ToolOutput, sent: dict[str, Any], ran: dict[str, Any], shown: str
) -> ToolOutput:
    """The output of a call a pre_tool hook rewrote from `sent` to `ran`, saying so: the
    model must not take it for the result of the call it sent, nor the user for that of
    the call announced (`ToolStarted` has the model's arguments: the hooks run after
    it). `shown`: the rewritten call's key argument, when the rewrite changed it."""
    changed = {key: value for key, value in ran.items() if sent.get(key) != value}
    gone = [key for key in sent if key not in ran]
    what = json.dumps(changed, ensure_ascii=False)
    what = what if len(what) <= _REWRITE_SHOWN else f"{what[:_REWRITE_SHOWN]}…"
    without = f", without {', '.join(gone)}" if gone else ""
    note = (
        f"[A hook changed this call's arguments before it ran, so this is the result of "
        f"{what}{without}, not of the call you sent.]"
    )
    # Its outcome and `shown` are cut to fit one summary, never the words saying a hook
    # rewrote it: the cut to `_SUMMARY_MAX` had taken them, the parenthesis with them.
    outcome, shown = _first_line(output.summary or output.content), _first_line(shown)
    rewrote = "a hook rewrote it to: " if shown else "a hook rewrote its arguments"
    room = _SUMMARY_MAX - len(rewrote) - len(" ()")
    outcome = _clipped(outcome, max(room - len(shown), _OUTCOME_KEPT))
    rewrote += _clipped(shown, room - len(outcome) if outcome else _SUMMARY_MAX - len(rewrote))
    return replace(
        output,
        content=f"{note}\n{output.content}",
        summary=f"{outcome} ({rewrote})" if outcome else rewrote,
        details={**output.details, "rewritten_arguments": ran},
    )


_REWRITE_SHOWN = 2_000  # characters of the rewritten arguments the model is shown
_OUTCOME_KEPT = 40  # characters of a rewritten call's outcome kept beside a long key argument


def _clipped(text: str, most: int) -> str:
    return text if len(text) <= most else f"{text[: most - 1]}…"


def _with_refusal_hint(
    refusal: ToolOutput, tool: Tool, params: Params, ctx: ToolContext
) -> ToolOutput:
    """A refused call, plus what the tool can add about it (see `Tool` in tools.base)."""
    hint_for = getattr(tool, "refusal_hint", None)
    if not refusal.is_error or hint_for is None:
        return refusal
    try:
        hint = hint_for(params, ctx)
    except Exception:  # a hint is a courtesy; never let it break the run
        return refusal
    return replace(refusal, content=f"{refusal.content}\n{hint}") if hint else refusal


def _groups(prepared: list[_Prepared]) -> list[list[_Prepared]]:
    """Consecutive read-only calls form one concurrent group, and so do consecutive
    calls of `concurrent` tools; others run alone."""
    groups: list[list[_Prepared]] = []
    for item in prepared:
        kind = _concurrency(item)
        if kind is not None and groups and _concurrency(groups[-1][-1]) == kind:
            groups[-1].append(item)
        else:
            groups.append([item])
    return groups


def _concurrency(item: _Prepared) -> str | None:
    """Which concurrent group a call may join: "read", "concurrent", or None (alone)."""
    if item.tool is None:
        return None
    if item.tool.read_only:
        return "read"
    return "concurrent" if item.tool.concurrent else None


def _shared_room(ctx: ToolContext, calls: int) -> ToolContext:
    """The context the calls of one reply run with: each output capped at its share of
    `limits.reply_outputs_max_bytes` when `calls` of them at the usual cap would not
    fit (a tool sizes what it shows by it, so `read` pages record what they showed)."""
    limits = ctx.limits
    room = limits.reply_outputs_max_bytes
    if room is None or calls * limits.output_max_bytes <= room:
        return ctx
    share = max(room // calls, _SMALLEST_SHARE)
    return replace(ctx, limits=replace(limits, output_max_bytes=share))


_SMALLEST_SHARE = 2_000  # bytes: a page of a few dozen lines, an error in full


def _within_cap(
    output: ToolOutput, ctx: ToolContext, kept: Callable[[], Sequence[str]] = tuple
) -> ToolOutput:
    """`output` no larger than the tool output cap, whatever produced it: a post_tool
    hook's replacement of 900,000 characters went to the model whole. The texts `kept()`
    gives that it holds (what a hook must keep word for word: a nested AGENTS.md, which
    the instruction budget bounds) are not counted and never cut: they follow the rest,
    capped without them."""
    if _fits(output.content, ctx):
        return output
    rest, held = output.content, []
    for text in kept():
        if text and text in rest:
            rest = rest.replace(text, "", 1)
            held.append(text)
    if held and _fits(rest, ctx):
        return output
    from lathe.tools.capping import capped

    rest = rest.rstrip() if held else rest
    cut = capped(rest, ctx, is_error=output.is_error, summary=output.summary)
    content = "\n\n".join([cut.content, *held])
    return replace(output, content=content, details={**output.details, **cut.details})


def _fits(text: str, ctx: ToolContext) -> bool:
    limit = ctx.limits.output_max_bytes
    return len(text) * 4 <= limit or len(text.encode()) <= limit  # the first: whatever it holds


def _printable_output(output: ToolOutput) -> ToolOutput:
    """`output` with no lone surrogate (a byte of a file that is not UTF-8, kept so by
    the file tools) in what reaches the model, the session and the events."""
    from lathe.tools.files import printable

    details = {k: printable(v) if isinstance(v, str) else v for k, v in output.details.items()}
    return replace(
        output,
        content=printable(output.content),
        summary=printable(output.summary),
        details=details,
    )


def _first_line(text: str) -> str:
    """A summary as events promise it: one line (a missed edit's message held a
    stretch of the file), at most 120 characters, its control bytes written out (an
    MCP server's result once wrote the clipboard through the progress line: OSC 52)."""
    from lathe.exec.terminal import visible_text

    text = visible_text(text.strip())
    line = text.splitlines()[0] if text else ""
    return line[:_SUMMARY_MAX]


_SUMMARY_MAX = 120  # characters of a summary


def refused_results(
    calls: Sequence[ToolCall],
    reason: str,
    summary: str,
    emit: Callable[[AgentEvent], None],
    *,
    started: bool = False,
    duration_ms: float = 0.0,
) -> list[ToolResultMessage]:
    """An error result for each call, none of them run (a reply cut off by the output
    limit, a run that ended before its calls could run); shown like any failed call.
    `started`: the faces already saw the calls start (only their end is emitted);
    `duration_ms`: how long a call cut short had run."""
    results = []
    for call in calls:
        if not started:
            emit(ToolStarted(call_id=call.id, name=call.name, arguments={}, summary=""))
        emit(
            ToolFinished(
                call_id=call.id, name=call.name, is_error=True, summary=summary,
                duration_ms=duration_ms, details={}, output=reason,
            )
        )  # fmt: skip
        results.append(
            ToolResultMessage(tool_call_id=call.id, name=call.name, content=reason, is_error=True)
        )
    return results


def result_message(call: ToolCall, output: ToolOutput) -> ToolResultMessage:
    """The conversation's answer to `call`: what its tool (and the hooks) returned."""
    return ToolResultMessage(
        tool_call_id=call.id, name=call.name, content=output.content, is_error=output.is_error
    )
