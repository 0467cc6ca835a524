"""The verify gate, a finish handler (`agent/finish.py`): lathe runs the check itself
when the model says it is done. The evidence a run without a gate ends with, and the
reading of a runner's output, are `agent/evidence.py`.

lathe never claims "verified" for a check it did not run itself: `run_verify` executes
the configured command through the same executor as the `bash` tool.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import re
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from lathe.agent.evidence import (
    check_counts,
    collection_stopped,
    counts_text,
    failing_tests,
    may_change_files,
    reports_failure,
)
from lathe.agent.finish import (
    MAX_LATHE_ROUNDS,
    CallRecord,
    ContinueWith,
    Decision,
    Finish,
    FinishHandler,
    RunState,
)
from lathe.agent.finish import note as lathe_note
from lathe.errors import UsageError
from lathe.events import RunStatus, VerifyFinished, VerifyStarted
from lathe.exec.base import ExecResult, Executor
from lathe.plural import plural, some_of
from lathe.types import AssistantMessage, Message, ToolCall
from lathe.words import Words


class VerifyCannotRun(UsageError):
    """The verify command cannot run at all (exit 126 or 127) before any change; the
    run stops before the first model call."""


ReplyCodeCalls = Callable[[str, int], Awaitable[list[ToolCall]]]
"""Edit calls for the code a "done" reply shows (`reply_code.edit_calls_for`), given
the reply's text and the turn."""
KeepFiles = Callable[[Sequence[ToolCall]], Callable[[], None]]
"""Saves the files the calls will change; what it returns puts them back."""
ShownCodeNote = Callable[[str], Awaitable[str | None]]
"""What to say of the code a "done" reply shows and lathe did not apply, given the
reply's text (`reply_code.shown_code_note`): None, the `code_in_reply` note; "", none;
else that text."""


@dataclass(frozen=True)
class VerifySettings:
    command: str
    run_first: bool = False
    """Run the check before the first turn of a new conversation (the baseline)."""
    idle_claim_limit: int = 3
    """"Done" replies in a row, with no tool call between, while the check fails."""


class VerifyGate(FinishHandler):
    """A reply without calls makes lathe run the verify command itself: passing ends the
    run `verified`; failing sends the output back and the run goes on. Also: the
    baseline check before the first turn, code shown in a "done" reply applied as edits
    (`reply_code`, None: off) after a failed check, the "claims done without acting"
    stall, and `failed` when the turns run out after a failed check."""

    def __init__(
        self,
        settings: VerifySettings,
        run_check: Callable[[str], Awaitable[ExecResult]],
        words: Words,
        reply_code: ReplyCodeCalls | None = None,
        keep_files: KeepFiles | None = None,
        failing_code: Callable[[ExecResult], str] | None = None,
        check_files: Callable[..., Awaitable[dict[str, str]]] | None = None,
        check_files_at_start: dict[str, str] | None = None,
        changed_by: Callable[[ToolCall], list[Path] | None] | None = None,
        shown_code: ShownCodeNote | None = None,
    ) -> None:
        """`keep_files`: how code applied from a reply is put back when the check fails
        worse after it than before (None: it stays). `failing_code`: the code a failed
        check ran through, shown after its output (None, or "": nothing). `check_files`:
        the digests of the files the check is made of (`agent.check_files`), taken when
        the run begins and when it is verified; a change is the verified run's reason.
        Called with `earlier_runs=True` when a conversation goes on: the files its
        earlier runs changed count as they were before them. `changed_by`: the files a
        call may change, named before it runs (None: they cannot be named;
        `check_files.changed_by`); with it, whether anything changed since the check
        failed at the start is judged by those files' content, so a change taken back is
        none (without it, by whether a call may have changed files). `shown_code`: what
        to say of code a reply shows that lathe did not apply (None: always that code in
        a reply changes no file)."""
        self._settings = settings
        self._run_check = run_check
        self._words = words
        self._reply_code = reply_code
        self._keep_files = keep_files
        self._failing_code = failing_code
        self._shown_code = shown_code
        self._put_back: Callable[[], None] | None = None
        self._failed = False
        self._idle_claims = 0
        # A "done" reply whose code is being applied, and the failed check it got.
        self._pending: AssistantMessage | None = None
        self._pending_result: ExecResult | None = None
        # Code applied whole that made the check worse (its notes, and how much worse),
        # while its changes are tried one at a time; the ones left to try.
        self._whole: tuple[list[str], str] | None = None
        self._parts: list[ToolCall] = []
        self._part_checked = False  # a part was applied and checked
        self._check_files = check_files
        self.check_files_at_start = check_files_at_start
        """The check files' digests the run is judged against, taken when it begins
        unless set before: another attempt of the same task keeps the first attempt's
        (a file the check itself wrote in attempt 1, which no restore sees, had counted
        as original in attempt 2)."""
        self._passed_before = False
        self._baseline: ExecResult | None = None  # the check before any change, when run
        self._last_shown = ""  # what the last failed check showed the model, as compared
        self._changed = False  # a call that may change files succeeded since then
        self._unchecked = False  # one succeeded since the check last ran (or the run began)
        self._changed_by = changed_by
        # Each file a call of the run was about to change, and its digest then (None:
        # absent); the calls whose files could not be named, and whether one of them may
        # have changed files (then anything may differ).
        self._before: dict[Path, str | None] = {}
        self._unnamed: set[str] = set()
        self._unseen_change = False

    async def begin(self, run: RunState) -> Sequence[Message]:
        self._failed, self._idle_claims, self._pending = False, 0, None
        self._whole, self._parts = None, []
        self._passed_before, self._baseline, self._changed = False, None, False
        self._unchecked = False
        self._before, self._unnamed, self._unseen_change = {}, set(), False
        self._last_shown = ""
        if self._check_files is not None and self.check_files_at_start is None:
            earlier_runs = not run.new_conversation
            self.check_files_at_start = await self._check_files(earlier_runs=earlier_runs)
        if not (self._settings.run_first and run.new_conversation):
            return ()
        command = self._settings.command
        result = await self._check(run, baseline=True)
        reason = unusable_reason(command, result)
        if reason:
            raise VerifyCannotRun(reason)
        self._baseline = result
        if passed(result):
            self._passed_before = True
            return (lathe_note(self._words.say("baseline_passes", command=command)),)
        text = self._words.say(
            "baseline_fails", command=command, status=_status(result), output=self._shown(result)
        )
        return (lathe_note(text),)

    async def after_reply(self, reply: AssistantMessage, run: RunState) -> Decision | None:
        if reply.tool_calls:
            await self._note_before(reply.tool_calls)
            return None
        result = await self._check(run)
        if passed(result):
            reason = await self._caveat(result)
            return Finish(RunStatus.VERIFIED, answer=run.answer(reply), reason=reason)
        if not self._changed and (unusable := unusable_reason(self._settings.command, result)):
            # Nothing this run did can have broken it (a conversation that goes on has no
            # baseline): the model must not be blamed, turn after turn, for a typo in it.
            return Finish(RunStatus.FAILED, answer=run.answer(reply), reason=unusable)
        self._failed = True
        if self._reply_code and "```" in reply.text:
            calls = await self._reply_code(reply.text, run.turn)
            if calls:
                await self._note_before(calls)
                self._pending = reply
                self._pending_result = result
                self._put_back = self._keep_files(calls) if self._keep_files else None
                return ContinueWith(calls=calls, note="the code in the reply")
        self._idle_claims += 1
        return await self._after_failure(reply, result, applied=())

    async def after_calls(
        self, calls: Sequence[CallRecord], run: RunState, *, by_lathe: bool
    ) -> Decision | None:
        changing = [record for record in calls if may_change_files(record)]
        self._changed = self._changed or bool(changing)
        self._unchecked = self._unchecked or bool(changing)
        self._unseen_change |= any(record.call.id in self._unnamed for record in changing)
        if not by_lathe:
            self._idle_claims = 0
            return None
        reply, self._pending = self._pending, None
        if reply is None:
            return None
        notes = [self._applied_note(record) for record in calls]
        before = self._pending_result
        assert before is not None
        if all(record.output.is_error for record in calls):
            if self._whole is not None:  # a part of a change that was applied whole
                return await self._next_part(reply, before)
            self._idle_claims += 1
            return await self._after_failure(reply, before, applied=notes)
        self._idle_claims = 0
        after = await self._check(run)
        if self._whole is not None:
            self._part_checked = True
            notes = [self._part_kept(before), *notes]
        if passed(after):
            self._whole = None
            record = self._after_applied(notes, after)
            answer = self._applied_answer(calls)
            return Finish(
                RunStatus.VERIFIED,
                answer=answer,
                messages=(lathe_note(record),),
                reason=await self._caveat(after),
            )
        put_back = self._put_back
        if put_back is None:  # nothing to put back with: what was applied stays
            self._whole = None
            return await self._after_failure(reply, after, applied=notes)
        worse = await asyncio.to_thread(worse_after, before, after)
        if self._whole is not None:
            if worse or not _better(before, after):
                put_back()
                return await self._next_part(reply, before)
            self._whole = None  # this part stays
            return await self._after_failure(reply, after, applied=notes)
        if not worse:
            return await self._after_failure(reply, after, applied=notes)
        put_back()
        from lathe.agent.reply_code import one_change_each

        # The last round is the last part's: its answer asks for no more calls.
        parts = one_change_each([record.call for record in calls], MAX_LATHE_ROUNDS - 1)
        if parts:
            self._whole, self._parts, self._part_checked = (notes, worse), parts, False
            return await self._next_part(reply, before)
        return self._reverted(notes, worse, before)

    async def _next_part(self, reply: AssistantMessage, before: ExecResult) -> ContinueWith:
        """The next change of code applied whole that made the check worse, tried alone
        on the files as they were (`one_change_each`); when none is left, the whole is
        said to be put back."""
        if not self._parts:
            assert self._whole is not None
            (notes, worse), self._whole = self._whole, None
            if self._part_checked:  # not when no part could be applied
                worse += (
                    " (and none of its changes alone made it better: lathe tried them "
                    "one at a time)"
                )
            return self._reverted(notes, worse, before)
        part = self._parts.pop(0)
        await self._note_before([part])
        self._pending, self._pending_result = reply, before
        self._put_back = self._keep_files([part]) if self._keep_files else None
        return ContinueWith(calls=[part], note="a part of the code in the reply")

    def _part_kept(self, before: ExecResult) -> str:
        """What the model is told of a part of its code lathe kept alone."""
        assert self._whole is not None
        return self._words.say(
            "applied_part", before=counts_text(check_counts(before.output)), after=self._whole[1]
        )

    def _reverted(self, notes: Sequence[str], worse: str, before: ExecResult) -> ContinueWith:
        text = self._words.say(
            "applied_reverted",
            applied="\n\n".join(notes),
            before=counts_text(check_counts(before.output)),
            after=worse,
            output=self._shown(before),
        )
        return ContinueWith(messages=(lathe_note(text),))

    async def _caveat(self, result: ExecResult) -> str:
        """What a verified run's reason says, "" when nothing is doubtful: that the check
        passed before the run changed anything (it may not test the task at all); else
        each of: which files of the check itself changed since it first ran (a
        conftest.py marking the failure xfail passes too), that it ran fewer tests than
        at the start or printed no counts where it did (a deselected test, a quiet
        `os._exit(0)`), that nothing changed since it failed (a flaky check)."""
        if self._passed_before:
            return (
                "the check passed before the run changed anything, so it may not test "
                "the task: see that it fails without the change"
            )
        doubts = [await self._changed_check_files(), self._fewer_tests(result)]
        if self._baseline is not None and not await self._differs():
            doubts.append(
                "nothing was changed since the check failed at the start, so it may be "
                "flaky: run it again"
            )
        return "; ".join(doubt for doubt in doubts if doubt)

    async def _note_before(self, calls: Sequence[ToolCall]) -> None:
        """Keep the digest of each file `calls` are about to change that no call of the
        run changed before, and which calls' files cannot be named. Only the flaky
        caveat reads them, which needs a baseline that failed: without one nothing is
        kept (each bash call would be analysed again for nothing)."""
        if self._changed_by is None or self._unseen_change:
            return
        if self._baseline is None or self._passed_before:
            return
        new: list[Path] = []
        for call in calls:
            paths = self._changed_by(call)
            if paths is None:
                self._unnamed.add(call.id)
            else:
                new += [path for path in paths if path not in self._before]
        if new:
            from lathe.agent.check_files import digest_of

            digests = await asyncio.to_thread(lambda: [digest_of(path) for path in new])
            self._before.update(zip(new, digests, strict=True))

    async def _differs(self) -> bool:
        """Whether the workspace may differ from how the run found it: a file a call
        changed holds other content now (one changed and changed back does not), or a
        call whose files cannot be named may have changed any."""
        if not self._changed or self._changed_by is None or self._unseen_change:
            return self._changed
        from lathe.agent.check_files import digest_of

        before = dict(self._before)
        return await asyncio.to_thread(
            lambda: any(
                digest_of(path) != digest or path.is_dir() for path, digest in before.items()
            )
        )

    async def _changed_check_files(self) -> str:
        if self._check_files is None or self.check_files_at_start is None:
            return ""
        from lathe.agent.check_files import changed

        files = changed(self.check_files_at_start, await self._check_files())
        if not files:
            return ""
        shown = some_of(files, 10)
        return (
            f"the check passed, but its own files changed since it first ran: {shown} "
            "(see that they still test what they did)"
        )

    def _fewer_tests(self, result: ExecResult) -> str:
        before = check_counts(self._baseline.output) if self._baseline is not None else None
        if before is None:
            return ""
        after = check_counts(result.output)
        if after is None:
            return (
                f"the check printed no test counts, where it printed {counts_text(before)} "
                "at the start (see that its tests still run)"
            )
        ran, ran_before = after["passed"] + after["failed"], before["passed"] + before["failed"]
        if ran >= ran_before:
            return ""
        return (
            f"{plural(ran, 'test')} ran where {ran_before} did before (see that none was "
            "deselected, skipped or removed)"
        )

    async def ending(self, end: Finish, run: RunState) -> Finish | None:
        """A run about to end `stuck` with a change the check has not seen is checked
        first: a fix the model made before it went round in circles is `verified`, not
        undone by another attempt. So is one about to end `provider_error` on a reply
        (the provider's content filter stopped it), whatever changed: a passing check is
        evidence whatever the reply said. And one a token or cost budget stops before
        its next request (the check costs none): it ends as the check says, `verified`
        or `failed`, its reason naming the budget. (A time budget's end comes from its
        deadline, which leaves no time for a check and asks no handler.)"""
        if end.status is RunStatus.OUT_OF_BUDGET and self._unchecked:
            return await self._checked_at_budget(end, run)
        if end.status is RunStatus.STUCK and self._unchecked:
            reason = f"{end.reason}; the check passed on what it changed before"
        elif end.status is RunStatus.PROVIDER_ERROR:
            reason = f"{end.reason}; the check passed"
        else:
            return None
        return await self._verified_now(run, reason, end.messages, answer=end.answer)

    async def _checked_at_budget(self, end: Finish, run: RunState) -> Finish:
        stopped = f"{end.reason}, which stopped further turns"
        reason = f"{stopped}; the check passed on the change made before"
        if (verified := await self._verified_now(run, reason, end.messages)) is not None:
            return verified
        self._failed = True
        reason = f"{stopped}; the check failed on the change made before"
        return Finish(RunStatus.FAILED, reason=reason, messages=end.messages)

    async def out_of_turns(self, run: RunState) -> Finish | None:
        """What changed since the check last ran is checked now: a fix made in the last
        turn is `verified`, not ended on the failure it fixed (and so not undone by
        another attempt). With no such change, a failed check ends the run `failed`."""
        if self._unchecked:
            reason = f"the turn limit ({run.turn}) ran out after a change, and the check passed"
            if (verified := await self._verified_now(run, reason)) is not None:
                return verified
            self._failed = True
        if not self._failed:
            return None
        return Finish(
            RunStatus.FAILED,
            reason=f"the verify command still failed after {plural(run.turn, 'turn')}",
        )

    async def _verified_now(
        self, run: RunState, reason: str, messages: Sequence[Message] = (), answer: str = ""
    ) -> Finish | None:
        """The run `verified` for `reason` (with any caveat) when the check passes now,
        on a change it had not seen; None when it fails."""
        result = await self._check(run)
        if not passed(result):
            return None
        caveat = await self._caveat(result)
        return Finish(
            RunStatus.VERIFIED,
            reason=f"{reason}; {caveat}" if caveat else reason,
            answer=answer,
            messages=messages,
        )

    async def _after_failure(
        self, reply: AssistantMessage, result: ExecResult, *, applied: Sequence[str]
    ) -> Decision:
        command = self._settings.command
        if self._idle_claims >= self._settings.idle_claim_limit:
            return Finish(
                RunStatus.STUCK,
                reason=f"the model said it was done {self._idle_claims} times in a row without "
                f"acting on the failing `{command}`",
            )
        code_note = "" if applied else await self._code_note(reply.text)
        return ContinueWith(messages=(lathe_note(self._feedback(result, applied, code_note)),))

    async def _code_note(self, reply_text: str) -> str:
        """What the answer to a "done" reply says of the code it shows, lathe not having
        applied it: that code in a reply changes no file, unless `shown_code` knows
        better (the code is already in the file; it changes a test the model may not
        change); "" when it shows none."""
        if not _CODE_BLOCK.search(reply_text):
            return ""
        said = await self._shown_code(reply_text) if self._shown_code else None
        return self._words.say("code_in_reply") if said is None else said

    def _feedback(self, result: ExecResult, applied: Sequence[str], code_note: str) -> str:
        """The gate's answer to a "done" reply whose check failed. `applied`: what became
        of the code the reply showed, when lathe applied it as edits; the check's result
        is then the one after those edits. `code_note`: what to say of the code it
        showed otherwise."""
        if applied:
            return self._words.say(
                "verify_failed_after_edits",
                applied=self._after_applied(applied, result),
                output=self._shown(result),
            )
        shown_code = code_note + "\n\n" if code_note else ""
        return self._words.say(
            "verify_failed",
            command=self._settings.command,
            status=_status(result),
            output=self._shown(result),
            code_in_reply=shown_code,
        )

    def _applied_answer(self, calls: Sequence[CallRecord]) -> str:
        """The run's answer when lathe made the change a reply only showed: what changed
        and that the check passes, not the reply's advice to make that change."""
        applied = [record.output.details for record in calls if not record.output.is_error]
        paths = [str(details.get("path", "")) for details in applied]
        shown = "\n".join(d["diff"].rstrip("\n") for d in applied if d.get("diff"))
        return (
            f"lathe applied the change the model's reply showed, to {', '.join(paths)}, and "
            f"`{self._settings.command}` passes." + (f"\n\n```diff\n{shown}\n```" if shown else "")
        )

    def _after_applied(self, applied: Sequence[str], result: ExecResult) -> str:
        outcome = "passed" if passed(result) else _status(result)
        return self._words.say(
            "after_applied",
            applied="\n\n".join(applied),
            command=self._settings.command,
            outcome=outcome,
        )

    def _applied_note(self, record: CallRecord) -> str:
        """One applied (or refused) edit that came from code in the model's reply."""
        name = "applied_edit_refused" if record.output.is_error else "applied_edit"
        return self._words.say(name, result=record.output.content)

    def _shown(self, result: ExecResult) -> str:
        """A failed check's output as the model sees it, and the code it ran through; a
        line saying so when it is what the last failed check showed (a note is never
        pruned: twelve rounds of the same 30 KB failure sent 3.9 MB)."""
        code = self._failing_code(result) if self._failing_code else ""
        shown = _output(result)
        shown = shown + "\n\n" + self._words.say("failing_code", code=code) if code else shown
        # Compared without the file a cut output is kept in, a new one each time.
        alike = _timeless(result.output.rstrip() + code)
        if self._last_shown and alike == self._last_shown:
            # Its end stays, should a compaction have taken the rest.
            end = "\n".join(shown.splitlines()[-_SUMMARY_LINES:])[-1000:]
            return f"[the same output as the last failed check, above; it ended:]\n{end}"
        self._last_shown = alike
        return shown

    async def _check(self, run: RunState, *, baseline: bool = False) -> ExecResult:
        """Run the check, between `verify_started` and `verify_finished`. A check cut
        before it ends (the run's time budget, an interrupt) or that does not run (the
        person declined it: `CheckDeclined`) still gets its `verify_finished`: no exit
        code, not passed, then the cancellation or error goes on."""
        command = self._settings.command
        run.emit(VerifyStarted(command=command, baseline=baseline))
        self._unchecked = False
        started = time.monotonic()
        try:
            result = await self._run_check(command)
        except BaseException:
            run.emit(
                VerifyFinished(
                    command=command,
                    exit_code=None,
                    passed=False,
                    output_tail="",
                    baseline=baseline,
                    duration_ms=(time.monotonic() - started) * 1000,
                )
            )
            raise
        run.emit(
            VerifyFinished(
                command=command,
                exit_code=result.exit_code,
                passed=passed(result),
                output_tail=_tail(result.output, 2000),
                baseline=baseline,
                duration_ms=result.duration_s * 1000,
                timed_out=result.timed_out,
            )
        )
        return result


# `[ \t]*`, not `\s*`: read on across every blank line after a line's start (quadratic).
_CODE_BLOCK = re.compile(r"^[ \t]*```", re.MULTILINE)
# How long a run took, or when: what differs between two runs of the same failure
# ("1 failed in 0.05s", "12:01:33").
_TIMING = re.compile(r"\b\d+(?:\.\d+)?\s?(?:s|ms|sec|seconds?)\b|\b\d\d?:\d\d:\d\d(?:\.\d+)?\b")


def _timeless(output: str) -> str:
    return _TIMING.sub("T", output)


def _tail(output: str, max_chars: int) -> str:
    """The end of `output` within `max_chars`, from a line's start (or a space's, in one
    long line): a cut inside a word could keep the end of a secret, which masking
    only knows whole."""
    if len(output) <= max_chars:
        return output
    tail = output[-max_chars:]
    line = tail.find("\n")
    if line != -1:
        return tail[line + 1 :]
    word = re.search(r"\s", tail)
    return tail[word.end() :] if word else ""


async def run_verify(
    command: str,
    executor: Executor,
    *,
    workspace: Path,
    timeout_s: float,
    max_output_bytes: int,
    spill_dir: Path,
) -> ExecResult:
    """Run the check with `pipefail`, as CI does: `pytest | tail -3` would pass on
    tail's exit code whatever pytest said."""
    return await executor.run(
        f"set -o pipefail\n{command}",
        cwd=workspace,
        timeout=timeout_s,
        max_output_bytes=max_output_bytes,
        spill_dir=spill_dir,
    )


def worse_after(before: ExecResult, after: ExecResult) -> str:
    """How the check after a change is worse than the one before it, as the end of "the
    check went from <before's counts> to ...", or "" when it is not. Worse: it timed
    out where that one did not; it printed no counts where that one did; more failing
    or fewer passing tests (`made_worse`); its tests stopped at collection or fewer of
    them ran (a syntax error: "1 error" where 2 had failed); or, as many having run and
    as many failing, it names a test failing that the one before did not, when that one
    names its failing tests (fewer failing is better, whatever the names). A check that
    printed no counts before is never judged (but for a timeout). Reads up to 8 MiB of
    each output (`whole_output`): call it off the event loop."""
    if after.timed_out and not before.timed_out:
        return "a check that timed out"
    said_before, said = whole_output(before), whole_output(after)
    old, new = check_counts(said_before), check_counts(said)
    if old is None:
        return ""
    if new is None or made_worse(old, new):
        return counts_text(new)
    shown = counts_text(new)
    if (stopped := collection_stopped(said)) and not collection_stopped(said_before):
        return f"{shown}, and the tests no longer ran ({stopped})"
    ran, ran_before = new["passed"] + new["failed"], old["passed"] + old["failed"]
    if ran < ran_before:
        return f"{shown}, and {plural(ran, 'test')} ran where {ran_before} did"
    named_before = failing_tests(said_before)
    # More tests ran: a newly named one may not have run before (`pytest -x`).
    if ran > ran_before or new["failed"] < old["failed"] or not named_before:
        return ""
    newly = sorted(failing_tests(said) - named_before)
    if not newly:
        return ""
    names = ", ".join(newly[:3]) + (f" and {len(newly) - 3} more" if len(newly) > 3 else "")
    return f"{shown}, with {names} failing, which did not fail before"


def _better(before: ExecResult, after: ExecResult) -> bool:
    """Whether the check after a change reports fewer failing tests than the one before
    it (that it is not worse is `worse_after`'s to say)."""
    old, new = check_counts(before.output), check_counts(after.output)
    return old is not None and new is not None and new["failed"] < old["failed"]


def made_worse(before: dict[str, int] | None, after: dict[str, int] | None) -> bool:
    """Whether the `check_counts` after a change report more failing or fewer passing
    tests than those before it; False when either output did not say."""
    if before is None or after is None:
        return False
    return after["failed"] > before["failed"] or after["passed"] < before["passed"]


# Lines that say what failed, in the output of test runners and compilers: pytest's
# "E ..." and "> ..." lines and its test headers, tracebacks, "path:line:" locations,
# errors and assertions, FAIL/FAILED, Rust's panics, jest's bullets.
_FAILURE_LINE = re.compile(
    r"^(E |> |_{3,} )|Error\b|error[:\[]|\bFAIL|\bassert|Traceback|panicked|●|^\S+:\d+:"
)
_SUMMARY_LINES = 5


def failure_focus(output: str, max_bytes: int) -> str:
    """`output` within about `max_bytes`: its last lines (the runner's summary), and
    before them, in order, the lines that say what failed, as many as fit, with a marker
    for each stretch left out. A head and a tail alone cut out the middle, where the
    failure is: the 1.5B was shown a test's name and the summary, never the error line."""
    from lathe.tools.files import cut_line

    lines = output.splitlines()
    summary = lines[-_SUMMARY_LINES:]
    body = lines[: len(lines) - len(summary)]
    # Each line within a share of the room: a 10 MB last line went whole.
    widest = max(max_bytes // (_SUMMARY_LINES + 1), 80)
    summary = [cut_line(line, widest) for line in summary]
    while summary and sum(len(line.encode()) + 1 for line in summary) > max_bytes:
        summary.pop(0)
    room = max_bytes - sum(len(line.encode()) + 1 for line in summary)
    kept: list[int] = []
    for number, line in enumerate(body):
        if not _FAILURE_LINE.search(line):
            continue
        line = body[number] = cut_line(line, widest)
        size = len(line.encode()) + 1
        if size > room:
            break
        kept.append(number)
        room -= size
    shown: list[str] = []
    last = -1
    for number in kept:
        if number > last + 1:
            shown.append(f"[... {plural(number - last - 1, 'line')} ...]")
        shown.append(body[number])
        last = number
    if len(body) > last + 1:
        shown.append(f"[... {plural(len(body) - last - 1, 'line')} ...]")
    return "\n".join([*shown, *summary])


def focused(result: ExecResult, max_bytes: int, spill_dir: Path) -> ExecResult:
    """A check's result with its output cut to `failure_focus` when longer than
    `max_bytes`, the whole kept in a file the model can read."""
    from dataclasses import replace

    from lathe.exec.output import cap_output

    whole = whole_output(result)
    data = whole.encode()
    if len(data) <= max_bytes:
        return result
    path = result.full_output_path or cap_output(data, max_bytes, spill_dir)[1]
    return replace(
        result, output=failure_focus(whole, max_bytes), truncated=True, full_output_path=path
    )


_WHOLE_MAX_BYTES = 8 * 1024 * 1024


def whole_output(result: ExecResult) -> str:
    """All a command printed, as a terminal shows it: its output, or when that was cut,
    the file holding it all — its last 8 MiB, where a runner's failures and summary are
    (a 100 MB log took 484 MB and half a minute to focus). A spill file that reached its
    cap does not hold the end: then the output's own head and tail are all there is."""
    from lathe.exec.output import SPILL_MAX_BYTES
    from lathe.exec.terminal import terminal_text

    if result.truncated and result.full_output_path is not None:
        with contextlib.suppress(OSError), result.full_output_path.open("rb") as spill:
            size = spill.seek(0, os.SEEK_END)
            if size < SPILL_MAX_BYTES:
                spill.seek(max(size - _WHOLE_MAX_BYTES, 0))
                return terminal_text(spill.read().decode("utf-8", "replace"))
    return result.output


def passed(result: ExecResult) -> bool:
    """Exit 0, in time, and no failing test in the summary it printed: a conftest can set
    the exit status to 0 (or `os._exit(0)`) after tests failed."""
    return result.exit_code == 0 and not result.timed_out and not reports_failure(result.output)


# The shell's own codes for "found but not executable" and "not found".
_CANNOT_RUN = {126: "it is not executable", 127: "command not found"}


_RUN_AS_MODULE = re.compile(r"(?:^|[\s;&|(])\S*python[\d.]*\s+-m\s+([\w.]+)")


def unusable_reason(command: str, result: ExecResult) -> str | None:
    """Why the verify command cannot run at all, when its exit code says so (126, 127)
    or its `python -m X` finds no module X; None when it ran (passing or failing)."""
    missing = _missing_runner(command, result)
    if missing:
        return (
            f"the verify command `{command}` cannot run: there is no module {missing} where "
            f"it runs (exit {result.exit_code}); install {missing} there, or fix the verify "
            "command (--verify, /verify or agent.verify), then start again"
        )
    why = _CANNOT_RUN.get(result.exit_code) if result.exit_code is not None else None
    if why is None:
        return None
    last = next((line for line in reversed(result.output.splitlines()) if line.strip()), "")
    said = f": {last.strip()[:200]}" if last else ""
    return (
        f"the verify command `{command}` cannot run (exit {result.exit_code}, {why}{said}); "
        "fix the verify command (--verify, /verify or agent.verify) so it runs here, then "
        "start again"
    )


def _missing_runner(command: str, result: ExecResult) -> str | None:
    """The module a `python -m X` check runs when Python said it has none, else None.
    A module the project's own code imports is a failing test, not this."""
    if result.exit_code in (0, None):
        return None
    for module in _RUN_AS_MODULE.findall(command):
        if re.search(rf"No module named '?{re.escape(module)}'?(\s|$)", result.output):
            return module
    return None


def _status(result: ExecResult) -> str:
    if result.timed_out:
        return f"was killed after its time limit ({result.duration_s:.0f}s)"
    if result.exit_code == 0:
        counts = check_counts(result.output) or {}
        return f"exited 0, but its output reports {counts.get('failed', '?')} failing"
    return f"failed with exit code {result.exit_code}"


def _output(result: ExecResult) -> str:
    more = (
        f"\n(The output was cut; the whole of it is in {result.full_output_path}.)"
        if result.truncated and result.full_output_path
        else ""
    )
    return result.output.rstrip() + more
