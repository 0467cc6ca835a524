"""The `bash` tool: run a shell command in the workspace through the executor.

A command that exits non-zero is a normal result (`is_error` False): the exit code in
the content is the signal, and "grep found nothing" or "3 tests failed" is exactly what
the model asked to learn. Only a command that had to be killed for running past its
timeout is an error result, since it never finished what was asked.
"""

from __future__ import annotations

import re
import shlex
from pathlib import Path
from typing import Annotated, Any, ClassVar

from pydantic import Field
from pydantic.json_schema import SkipJsonSchema

from lathe.errors import ToolError
from lathe.exec.base import ExecutorUnavailable
from lathe.tools.base import Params, Tool, ToolContext, ToolOutput

# The executor's marker; with a spill file it names the byte of it the omitted part
# starts at (`exec/output._OutputSink`).
_OMITTED = re.compile(r"\n\[\.\.\. (?:from byte ([\d,]+): )?[\d,]+ bytes omitted[^\n]*\.\.\.\]\n")


class BashParams(Params):
    command: str = Field(description="The shell command to run, e.g. 'pytest -q tests/'.")
    timeout: Annotated[float, Field(gt=0)] | SkipJsonSchema[None] = Field(
        default=None,
        description="Seconds before the command is stopped (default 120, max 600).",
    )


class BashTool(Tool):
    name: ClassVar[str] = "bash"
    brief: ClassVar[str] = (
        "Run a shell command in the workspace root; returns its output and exit code."
    )
    description: ClassVar[str] = (
        "Run a bash command in the workspace root and return its output (stdout and stderr "
        "together) and exit code. No input can be typed: use non-interactive flags."
    )
    parameters: ClassVar[type[Params]] = BashParams
    read_only: ClassVar[bool] = False
    repeatable: ClassVar[bool] = True

    def shell_command(self, arguments: dict[str, Any]) -> str | None:
        command = arguments.get("command")
        return command if isinstance(command, str) else None

    def summarize_call(self, args: BashParams) -> str:
        first = args.command.strip().splitlines()[0] if args.command.strip() else ""
        return first if len(first) <= 80 else first[:77] + "..."

    async def execute(self, args: BashParams, ctx: ToolContext) -> ToolOutput:
        if not args.command.strip():
            raise ToolError("command is empty; give the shell command to run")
        limits = ctx.limits
        timeout = min(args.timeout or limits.bash_default_timeout_s, limits.bash_max_timeout_s)
        try:
            result = await ctx.executor.run(
                args.command,
                cwd=ctx.workspace,
                timeout=timeout,
                # The notes below must fit too: over the cap, the result was cut again, the
                # real "omitted" marker with it, and the notice sent the model to a copy.
                max_output_bytes=max(limits.output_max_bytes - _notes_room(ctx.spill_dir), 0),
                spill_dir=ctx.spill_dir,
            )
        except ExecutorUnavailable as exc:  # it says why and the fix
            raise ToolError(str(exc)) from None
        notes = []
        if args.timeout and args.timeout > limits.bash_max_timeout_s:
            notes.append(f"[timeout capped at {limits.bash_max_timeout_s:g} s]")
        if result.truncated:
            notes.append(paging_notice(result.output, result.full_output_path))
        if result.timed_out:
            notes.append(
                f"[killed after {timeout:g} s: the command timed out and everything it "
                f"started was stopped]"
            )
            summary = f"timed out after {timeout:g} s"
        else:
            notes.append(f"[exit code: {result.exit_code}]")
            summary = f"exit {result.exit_code}"
        output = result.output
        if output and not output.endswith("\n"):
            output += "\n"
        return ToolOutput(
            content=output + "\n".join(notes),
            is_error=result.timed_out,
            summary=summary,
            details={
                "exit_code": result.exit_code,
                "command": args.command,
                "timed_out": result.timed_out,
                "truncated": result.truncated,
                "full_output_path": (
                    str(result.full_output_path) if result.full_output_path else None
                ),
                "duration_s": round(result.duration_s, 3),
            },
        )


NOTES_ROOM = 600  # bytes kept under the output cap for what lathe adds below an output


def _notes_room(spill_dir: Path) -> int:
    """NOTES_ROOM for a command's output, plus the spill file's path twice, as the paging
    notice names it: under a workspace a few folders deep, that notice and the note on a
    background job the command left outgrew 600 bytes, and the result was cut again."""
    named = spill_dir / "YYYYMMDD-HHMMSS-0123abcd.log"
    return NOTES_ROOM + 2 * len(shlex.quote(str(named)).encode())


def paging_notice(output: str, full_output_path: Path | None) -> str:
    """What the model reads under a cut output: where the whole is and how to page it.
    A cut inside a line is paged by bytes with bash: read shows a line only to its
    2,000th character, and a long one-line output was never seen past its head. The byte
    is the spill file's, as the marker gives it: counted on the text shown (escape codes
    dropped), it pointed hundreds of items before where the shown head ended."""
    if full_output_path is None:
        return "[output truncated: the middle part is lost; rerun with less output]"
    marker = _OMITTED.search(output)
    head = output[: marker.start()] if marker else ""
    where = f"[output truncated: the full output is in {full_output_path}."
    if marker and marker[1] and head and not head.endswith("\n"):
        start = int(marker[1].replace(",", ""))
        path = shlex.quote(str(full_output_path))
        return (
            f"{where} The cut is inside a line too long for read: see the omitted part "
            f"with bash, e.g. `tail -c +{start} {path} | head -c 20000` (change the first "
            f"number to move), or search it with grep]"
        )
    return (
        f'{where} Read the omitted part with read(path="{full_output_path}", '
        f"offset={head.count(chr(10)) + 1}), or search it with grep]"
    )
