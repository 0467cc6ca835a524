"""The finish handlers a run gets from its settings (`AgentDeps.finish` left unset)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from lathe.agent.budget import BudgetGuard
from lathe.agent.evidence import EvidenceEnd
from lathe.agent.finish import FinishHandler
from lathe.agent.replies import CutOffReply, EmptyReply, FilteredReply, UnreadableReply
from lathe.agent.stall import StallGuard
from lathe.agent.verify import (
    VerifyGate,
    VerifySettings,
    focused,
    run_verify,
    whole_output,
)

if TYPE_CHECKING:
    from pathlib import Path

    from lathe.agent.loop import AgentDeps
    from lathe.exec.base import ExecResult
    from lathe.types import ToolCall


def standard_handlers(deps: AgentDeps) -> list[FinishHandler]:
    """In the order they are asked: the repeat breaker (a repeat is not acted on), the
    budgets, a reply unreadable, filtered, empty or cut off (it cannot be taken as it
    is), then the verify gate, the stall rules, and the unverified end."""
    settings, words, ctx = deps.settings, deps.words, deps.tool_context
    handlers: list[FinishHandler] = []
    if settings.repeat_temperature is not None:  # first: it must see every reply
        from lathe.agent.repeats import RepeatBreaker

        handlers.append(RepeatBreaker(settings.repeat_temperature, words, deps.tools.get))
    if settings.budget is not None:
        handlers.append(BudgetGuard(settings.budget, priced=settings.price is not None))
    # Unreadable first (such a reply is also empty), then a filtered one (which may be
    # empty too, and ends the run), then empty: it must see every other reply to count
    # those in a row (a cut-off one is never empty).
    handlers += [
        UnreadableReply(words, settings.stall_repeat_limit),
        FilteredReply(),
        EmptyReply(gated=settings.verify_command is not None),
        CutOffReply(words, settings.stall_repeat_limit),
    ]
    if settings.verify_command:

        async def run_check(command: str) -> ExecResult:
            result = await run_verify(
                command,
                ctx.executor,
                workspace=ctx.workspace,
                timeout_s=settings.verify_timeout_s,
                max_output_bytes=ctx.limits.output_max_bytes,
                spill_dir=ctx.spill_dir,
            )
            if settings.verify_output_bytes is None:
                return result
            limit = min(settings.verify_output_bytes, ctx.limits.output_max_bytes)
            return focused(result, limit, ctx.spill_dir)

        reply_code = keep_files = None
        if settings.apply_reply_code and deps.tools.get("edit") is not None:
            # Imported only here: its patterns would cost every run's start-up otherwise.
            from lathe.agent.reply_code import FilesBefore, edit_calls_for

            reply_code = edit_calls_for(
                ctx.workspace, deny_read=ctx.deny_read, check=settings.verify_command
            )

            def keep_files(calls):
                return FilesBefore(ctx.workspace, calls, ctx.file_state).restore

        async def shown_code(text: str) -> str | None:
            import asyncio

            from lathe.agent.reply_code import shown_code_note

            return await asyncio.to_thread(
                shown_code_note, ctx.workspace, text, deny_edit=ctx.deny_edit,
                deny_read=ctx.deny_read, check=settings.verify_command,
            )  # fmt: skip

        failing_code = None
        if code_bytes := settings.failure_code_bytes:
            from lathe.agent.failure_code import code_at_failure

            not_shown = (*ctx.deny_edit, *settings.failure_code_leave_out)

            def failing_code(result: ExecResult) -> str:
                return code_at_failure(
                    whole_output(result),
                    ctx.workspace,
                    not_shown=not_shown,
                    never_read=ctx.deny_read,
                    max_bytes=code_bytes,
                )

        async def check_files(*, earlier_runs: bool = False) -> dict[str, str]:
            """The check files' digests now; with `earlier_runs`, with those the
            conversation's earlier runs changed as they were before (a conversation that
            goes on is judged against how it began)."""
            import asyncio

            return await asyncio.to_thread(_check_files, earlier_runs)

        def _check_files(earlier_runs: bool) -> dict[str, str]:
            from lathe.agent.check_files import (
                check_file_digests,
                is_check_file,
                judged_against,
                named_by,
            )

            command, workspace = settings.verify_command, ctx.workspace
            now = check_file_digests(workspace, command)
            before = settings.files_before_conversation
            if not earlier_runs or before is None:
                return now
            named = named_by(command, workspace) if command else []
            return judged_against(now, before(lambda path: is_check_file(path, workspace, named)))

        def changed_by(call: ToolCall) -> list[Path] | None:
            from lathe.agent.check_files import changed_by as files_changed_by

            tool = deps.tools.get(call.name)
            return files_changed_by(tool, call.parsed_arguments(), ctx.workspace)

        gate = VerifySettings(
            command=settings.verify_command,
            run_first=settings.verify_first,
            idle_claim_limit=settings.stall_repeat_limit,
        )
        handlers.append(
            VerifyGate(
                gate,
                run_check,
                words,
                reply_code=reply_code,
                keep_files=keep_files,
                failing_code=failing_code,
                check_files=check_files,
                check_files_at_start=settings.check_files_at_start,
                changed_by=changed_by,
                shown_code=shown_code,
            )
        )
    handlers.append(StallGuard(words, settings.stall_repeat_limit, workspace=ctx.workspace))
    handlers.append(EvidenceEnd())
    return handlers
