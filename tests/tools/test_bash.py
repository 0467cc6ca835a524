"""bash: the exit code as the signal, timeouts as errors, long output paged from a file."""

from __future__ import annotations

import time
from pathlib import Path

from tests.tools.helpers import call, call_error, process_alive

from lathe.tools.base import Limits, ToolContext
from lathe.tools.bash import BashTool
from lathe.tools.grep import GrepTool
from lathe.tools.read import ReadTool

bash = BashTool()


async def test_output_then_the_exit_code(ctx: ToolContext) -> None:
    out = await call(bash, ctx, command="echo hello; echo oops >&2")
    assert out.content == "hello\noops\n[exit code: 0]"
    assert (out.is_error, out.summary) == (False, "exit 0")
    assert out.details["exit_code"] == 0
    assert out.details["command"] == "echo hello; echo oops >&2"
    assert out.details["timed_out"] is False


async def test_a_failing_command_is_a_normal_result(ctx: ToolContext) -> None:
    out = await call(bash, ctx, command="printf 'no newline'; exit 2")
    assert out.content == "no newline\n[exit code: 2]"
    assert (out.is_error, out.summary, out.details["exit_code"]) == (False, "exit 2", 2)


async def test_runs_in_the_workspace(ctx: ToolContext) -> None:
    (ctx.workspace / "marker.txt").write_text("here\n")
    out = await call(bash, ctx, command="pwd; cat marker.txt")
    assert out.content == f"{ctx.workspace}\nhere\n[exit code: 0]"


async def test_quotes_and_specials_reach_bash_untouched(ctx: ToolContext) -> None:
    out = await call(bash, ctx, command="""printf '%s|' "a b" 'c"d' $'e\\tf'""")
    assert out.content == 'a b|c"d|e\tf|\n[exit code: 0]'


async def test_timeout_is_an_error_and_stops_grandchildren(ctx: ToolContext) -> None:
    started = time.monotonic()
    out = await call(bash, ctx, command="sleep 200 & echo $! > pid; wait", timeout=0.5)
    assert time.monotonic() - started < 6
    assert out.is_error
    assert out.content == (
        "[killed after 0.5 s: the command timed out and everything it started was stopped]"
    )
    assert out.summary == "timed out after 0.5 s"
    assert out.details["timed_out"] is True and out.details["exit_code"] is None
    pid = int((ctx.workspace / "pid").read_text())
    for _ in range(60):
        if not process_alive(pid):
            break
        time.sleep(0.05)
    assert not process_alive(pid)


async def test_timeout_is_capped_at_the_maximum(ctx: ToolContext) -> None:
    ctx.limits = Limits(bash_max_timeout_s=0.5)
    out = await call(bash, ctx, command="sleep 30", timeout=999)
    assert out.content == (
        "[timeout capped at 0.5 s]\n"
        "[killed after 0.5 s: the command timed out and everything it started was stopped]"
    )


async def test_stdin_is_closed(ctx: ToolContext) -> None:
    out = await call(bash, ctx, command="python3 -c 'import sys; print(repr(sys.stdin.read()))'")
    assert out.content == "''\n[exit code: 0]"


async def test_long_output_names_the_spill_file_and_how_to_page_it(ctx: ToolContext) -> None:
    ctx.limits = Limits(output_max_bytes=2000)
    out = await call(bash, ctx, command="seq 1 100000")
    assert out.details["truncated"] is True
    spill = Path(out.details["full_output_path"])
    assert spill.read_text() == "".join(f"{n}\n" for n in range(1, 100001))
    assert len(out.content) < 2600
    shown = out.content.split("\n[... ")[0].splitlines()
    assert shown == [str(n) for n in range(1, len(shown) + 1)]
    next_offset = len(shown) + 1
    notice = out.content.splitlines()[-2]
    assert notice == (
        f"[output truncated: the full output is in {spill}. Read the omitted part with "
        f'read(path="{spill}", offset={next_offset}), or search it with grep]'
    )
    assert out.content.endswith("100000\n" + notice + "\n[exit code: 0]")

    page = await call(ReadTool(), ctx, path=str(spill), offset=next_offset, limit=2)
    assert page.content.splitlines()[:2] == [
        f"{next_offset:>6}\t{next_offset}",
        f"{next_offset + 1:>6}\t{next_offset + 1}",
    ]
    found = await call(GrepTool(), ctx, pattern="^77777$", path=str(spill))
    assert found.content == f"{spill}:77777:77777"


async def test_empty_command_is_refused(ctx: ToolContext) -> None:
    assert await call_error(bash, ctx, command="  ") == (
        "command is empty; give the shell command to run"
    )


def test_summary_of_a_call_is_its_first_line() -> None:
    args = BashTool.parameters.model_validate({"command": "cd src &&\npytest -q"})
    assert bash.summarize_call(args) == "cd src &&"


async def test_a_command_the_executor_cannot_start_is_a_tool_error(ctx: ToolContext) -> None:
    # It reached the loop's catch-all as "internal error in the bash tool:
    # ExecutorUnavailable" (a container that could not start; here a workspace gone).
    import shutil

    shutil.rmtree(ctx.workspace)
    error = await call_error(bash, ctx, command="true")
    assert error.startswith("cannot start 'bash' in "), error
