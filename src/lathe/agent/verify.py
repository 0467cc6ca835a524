"""The verify gate and the evidence lathe reports when there is no gate.

lathe never claims "verified" for a check it did not run itself: `run_verify` executes
the configured command through the same executor as the `bash` tool.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from lathe.events import Evidence
from lathe.exec.base import ExecResult, Executor
from lathe.types import ToolResultMessage

_TEST_LIKE = re.compile(
    r"(^|[\s;&|(/])("
    r"pytest|py\.test|tox|nox|unittest|nosetests|"
    r"(npm|pnpm|yarn|bun)\s+(run\s+)?test|jest|vitest|mocha|"
    r"go\s+test|cargo\s+(test|nextest)|make\s+(test|check)|ctest|"
    r"mvn\s+(test|verify)|gradle\w*\s+test|rspec|phpunit|dotnet\s+test|"
    r"mix\s+test|swift\s+test|ruff|mypy|flake8|eslint|tsc"
    r")\b"
)


def is_test_like(command: str) -> bool:
    return bool(_TEST_LIKE.search(command))


@dataclass
class EvidenceTracker:
    """Remembers the last test-like command run after the last edit."""

    latest: Evidence | None = None

    def saw_edit(self) -> None:
        self.latest = None

    def saw_command(self, command: str, exit_code: int | None) -> None:
        if is_test_like(command):
            self.latest = Evidence(command=command, exit_code=exit_code)


async def run_verify(
    command: str,
    executor: Executor,
    *,
    workspace: Path,
    timeout_s: float,
    max_output_bytes: int,
    spill_dir: Path,
) -> ExecResult:
    return await executor.run(
        command,
        cwd=workspace,
        timeout=timeout_s,
        max_output_bytes=max_output_bytes,
        spill_dir=spill_dir,
    )


def passed(result: ExecResult) -> bool:
    return result.exit_code == 0 and not result.timed_out


_CODE_BLOCK = re.compile(r"^\s*```", re.MULTILINE)


def failure_message(
    command: str, result: ExecResult, reply_text: str = "", *, applied: Sequence[str] = ()
) -> str:
    """The verify gate's answer to a "done" reply (`reply_text`) whose check failed.
    `applied`: what became of the code the reply showed, when lathe applied it as edits
    (`reply_code_note`); the check's result is then the one after those edits."""
    if applied:
        return (
            f"{applied_message(applied, command, result)} Its output:\n\n{_output(result)}\n\n"
            "Read the failure, fix the code with the edit tool, and finish again when it passes."
        )
    shown_code = (
        "Your reply shows code, but code in a reply changes no file: make the change "
        "with the edit tool.\n\n"
        if _CODE_BLOCK.search(reply_text)
        else ""
    )
    return (
        f"You said you were done, but the verify command `{command}` {_status(result)}. "
        f"Its output:\n\n{_output(result)}\n\n{shown_code}"
        "Read the failure, fix the code, and finish again when it passes."
    )


def applied_message(applied: Sequence[str], command: str, result: ExecResult) -> str:
    """Edits made from a reply's code (`reply_code_note`), and how the check went after."""
    outcome = "passed" if passed(result) else _status(result)
    return "\n\n".join(applied) + f"\n\nAfter that, the verify command `{command}` {outcome}."


def reply_code_note(result: ToolResultMessage) -> str:
    """One applied (or refused) edit that came from code in the model's reply."""
    if result.is_error:
        return f"lathe tried to apply the code in your reply as an edit: {result.content}"
    return f"lathe applied the code in your reply as an edit:\n\n{result.content}"


# The shell's own codes for "found but not executable" and "not found".
_CANNOT_RUN = {126: "it is not executable", 127: "command not found"}


def unusable_reason(command: str, result: ExecResult) -> str | None:
    """Why the verify command cannot run at all, when its exit code says so (126, 127);
    None when it ran (passing or failing)."""
    why = _CANNOT_RUN.get(result.exit_code) if result.exit_code is not None else None
    if why is None:
        return None
    last = next((line for line in reversed(result.output.splitlines()) if line.strip()), "")
    said = f": {last.strip()[:200]}" if last else ""
    return (
        f"the verify command `{command}` cannot run (exit {result.exit_code}, {why}{said}); "
        "fix --verify (or agent.verify) so it runs here, then start again"
    )


def baseline_message(command: str, result: ExecResult) -> str:
    """What the check said before any change: the failure to start from."""
    if passed(result):
        return f"Before you started, lathe ran the verify command `{command}`: it passes."
    return (
        f"Before you started, lathe ran the verify command `{command}`: it "
        f"{_status(result)}. Its output:\n\n{_output(result)}"
    )


def _status(result: ExecResult) -> str:
    if result.timed_out:
        return f"was killed after its time limit ({result.duration_s:.0f}s)"
    return f"failed with exit code {result.exit_code}"


def _output(result: ExecResult) -> str:
    more = (
        f"\n(The output was cut; the whole of it is in {result.full_output_path}.)"
        if result.truncated and result.full_output_path
        else ""
    )
    return result.output.rstrip() + more
