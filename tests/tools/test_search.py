"""grep, glob and ls against real files and the real rg binary."""

from __future__ import annotations

import os
from pathlib import Path

from tests.tools.helpers import call, call_error, set_mtime, snapshot

from lathe.tools.base import Limits, ToolContext, ToolRegistry
from lathe.tools.builtin import builtin_tools
from lathe.tools.glob import GlobTool
from lathe.tools.grep import GrepTool, rg_binary
from lathe.tools.ls import ls

grep, glob = GrepTool(), GlobTool()


def _tree(root: Path) -> None:
    files = {
        "src/app.py": "import os\n\ndef main():\n    return os.getcwd()\n",
        "src/util.py": "def helper():\n    return 'Main'\n",
        "tests/test_app.py": "from src.app import main\n",
        "README.md": "# main project\n",
        "build/out.py": "def main(): pass\n",
        ".gitignore": "build/\n*.log\n",
        "debug.log": "main crashed\n",
        ".github/ci.yml": "run: main\n",
    }
    for name, text in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)


def test_rg_is_the_one_shipped_next_to_python() -> None:
    assert Path(rg_binary()).name == "rg"
    assert os.access(rg_binary(), os.X_OK)


async def test_grep_lists_path_line_text_relative_to_the_workspace(ctx: ToolContext) -> None:
    _tree(ctx.workspace)
    out = await call(grep, ctx, pattern=r"def \w+\(")
    assert sorted(out.content.splitlines()) == [
        "src/app.py:3:def main():",
        "src/util.py:1:def helper():",
    ]
    assert out.summary == "2 matches"


async def test_grep_respects_gitignore_without_a_git_repo(ctx: ToolContext) -> None:
    _tree(ctx.workspace)
    out = await call(grep, ctx, pattern="main")
    names = {line.split(":")[0] for line in out.content.splitlines()}
    assert names == {"src/app.py", "tests/test_app.py", "README.md", ".github/ci.yml"}


async def test_grep_options(ctx: ToolContext) -> None:
    _tree(ctx.workspace)
    out = await call(grep, ctx, pattern="MAIN", ignore_case=True, glob="*.py", path="src")
    assert sorted(out.content.splitlines()) == [
        "src/app.py:3:def main():",
        "src/util.py:2:    return 'Main'",
    ]
    out = await call(grep, ctx, pattern="getcwd", context=1)
    assert out.content == "src/app.py-3-def main():\nsrc/app.py:4:    return os.getcwd()"
    out = await call(grep, ctx, pattern="helper", path="src/util.py")
    assert out.content == "src/util.py:1:def helper():"


async def test_grep_no_matches_is_not_an_error(ctx: ToolContext) -> None:
    _tree(ctx.workspace)
    out = await call(grep, ctx, pattern="zebra", glob="*.md")
    assert (out.content, out.summary, out.is_error) == (
        "No matches for 'zebra' in the workspace (files matching *.md).",
        "no matches",
        False,
    )


async def test_grep_bad_regex_shows_rgs_message_and_a_hint(ctx: ToolContext) -> None:
    _tree(ctx.workspace)
    error = await call_error(grep, ctx, pattern="main(")
    assert error.startswith("rg failed: rg: regex parse error:")
    assert "unclosed group" in error
    assert error.endswith(
        "The pattern is a regular expression: put a backslash before ( ) [ ] { } . * + ? | "
        "^ $ \\ to match them literally."
    )


async def test_grep_pattern_is_never_shell_text(ctx: ToolContext) -> None:
    (ctx.workspace / "a.txt").write_text("--version\n$(touch pwned)\n")
    before = snapshot(ctx.workspace)
    out = await call(grep, ctx, pattern="--version")
    assert out.content == "a.txt:1:--version"
    out = await call(grep, ctx, pattern="$(touch pwned)'; touch x; '")
    assert out.content.startswith("No matches")
    assert snapshot(ctx.workspace) == before


async def test_grep_output_is_capped_with_a_notice(ctx: ToolContext) -> None:
    (ctx.workspace / "many.txt").write_text("hit\n" * 500)
    out = await call(grep, ctx, pattern="hit")
    lines = out.content.splitlines()
    assert lines[:2] == ["many.txt:1:hit", "many.txt:2:hit"]
    assert len([ln for ln in lines if ln.startswith("many.txt:")]) == 200
    assert out.content.endswith(
        "[Output cut at 200 lines. Narrow the search: a more specific pattern, a path, or a glob.]"
    )
    assert out.summary == "200+ matches"


async def test_grep_output_is_capped_by_bytes(ctx: ToolContext) -> None:
    ctx.limits = Limits(output_max_bytes=500)
    (ctx.workspace / "wide.txt").write_text(("hit " + "x" * 60 + "\n") * 50)
    out = await call(grep, ctx, pattern="hit")
    assert len(out.content) < 700
    assert "[Output cut at" in out.content


async def test_grep_long_lines_are_shortened(ctx: ToolContext) -> None:
    (ctx.workspace / "min.js").write_text("var a=" + "1," * 5000 + "needle;\n")
    out = await call(grep, ctx, pattern="needle")
    assert len(out.content) < 1000
    assert out.content.startswith("min.js:1:[...]1,1,")  # the part around the match
    assert "1,1,needle;" in out.content


async def test_grep_missing_path(ctx: ToolContext) -> None:
    error = await call_error(grep, ctx, pattern="x", path="nowhere")
    assert error == "nowhere does not exist. Use ls or glob to find the right path."


async def test_glob_lists_newest_first(ctx: ToolContext) -> None:
    _tree(ctx.workspace)
    set_mtime(ctx.workspace / "src/util.py", 300)
    set_mtime(ctx.workspace / "src/app.py", 200)
    set_mtime(ctx.workspace / "tests/test_app.py", 100)
    out = await call(glob, ctx, pattern="*.py")
    assert out.content.splitlines() == ["tests/test_app.py", "src/app.py", "src/util.py"]
    assert out.summary == "3 files"
    out = await call(glob, ctx, pattern="src/**/*.py")
    assert sorted(out.content.splitlines()) == ["src/app.py", "src/util.py"]
    out = await call(glob, ctx, pattern="*.py", path="tests")
    assert out.content == "tests/test_app.py"


async def test_glob_finds_hidden_files_but_not_git_or_ignored_dirs(ctx: ToolContext) -> None:
    _tree(ctx.workspace)
    (ctx.workspace / ".git").mkdir()
    (ctx.workspace / ".git" / "config.yml").write_text("x\n")
    out = await call(glob, ctx, pattern="*.yml")
    assert out.content == ".github/ci.yml"
    out = await call(glob, ctx, pattern="out.py")
    assert out.content == "No files match 'out.py' in the workspace."


async def test_glob_is_capped_with_a_notice(ctx: ToolContext) -> None:
    for n in range(250):
        (ctx.workspace / f"f{n:03}.txt").write_text("")
    out = await call(glob, ctx, pattern="*.txt")
    assert len(out.content.split("\n\n")[0].splitlines()) == 200
    assert out.content.endswith(
        "[Showing the 200 newest of 250 files. Narrow the pattern or give a path.]"
    )


async def test_glob_on_a_file_is_an_error(ctx: ToolContext) -> None:
    _tree(ctx.workspace)
    assert await call_error(glob, ctx, pattern="*", path="README.md") == (
        "README.md is a file, not a directory; glob searches directories"
    )


async def test_ls_lists_directories_first_with_a_slash(ctx: ToolContext) -> None:
    _tree(ctx.workspace)
    out = await call(ls, ctx)
    assert out.content.splitlines() == [
        ".github/",
        "build/",
        "src/",
        "tests/",
        ".gitignore",
        "debug.log",
        "README.md",
    ]
    out = await call(ls, ctx, path="src")
    assert out.content == "app.py\nutil.py"
    assert out.summary == "2 entries"


async def test_ls_errors_and_empty_directories(ctx: ToolContext) -> None:
    _tree(ctx.workspace)
    (ctx.workspace / "empty").mkdir()
    assert (await call(ls, ctx, path="empty")).content == "empty is an empty directory."
    assert await call_error(ls, ctx, path="README.md") == (
        "README.md is a file, not a directory; use read to see its content"
    )
    assert await call_error(ls, ctx, path="scr") == "scr does not exist. Did you mean: src?"


async def test_ls_is_capped(ctx: ToolContext) -> None:
    for n in range(520):
        (ctx.workspace / f"{n:04}").write_text("")
    out = await call(ls, ctx)
    assert out.content.endswith("[Showing 500 of 520 entries. Use glob to find specific files.]")


def test_builtin_tools_in_order_and_read_only_flags() -> None:
    tools = builtin_tools()
    assert [t.name for t in tools] == ["read", "edit", "write", "bash", "grep", "glob", "ls"]
    assert {t.name for t in tools if t.read_only} == {"read", "grep", "glob", "ls"}


def test_every_builtin_has_a_described_schema() -> None:
    for spec in ToolRegistry(builtin_tools()).specs():
        assert spec.description
        assert spec.parameters["additionalProperties"] is False
        for name, prop in spec.parameters["properties"].items():
            assert prop.get("description"), f"{spec.name}.{name} has no description"
            assert "anyOf" not in prop, f"{spec.name}.{name} should be a plain type"


async def test_files_a_read_rule_denies_stay_out_of_folder_searches(ctx: ToolContext) -> None:
    from dataclasses import replace

    from lathe.tools.edit import EditTool

    (ctx.workspace / ".env").write_text("API_TOKEN=abc123\n")
    (ctx.workspace / "app.py").write_text("token = 'API_TOKEN'\n")
    guarded = replace(ctx, deny_read=(".env",))

    assert ".env" in (await call(grep, ctx, pattern="API_TOKEN", path=".")).content
    found = await call(grep, guarded, pattern="API_TOKEN", path=".", glob=".*")
    assert ".env" not in found.content and "app.py" not in found.content
    assert "app.py" in (await call(grep, guarded, pattern="API_TOKEN", path=".")).content
    assert ".env" not in (await call(glob, guarded, pattern="*")).content
    error = await call_error(
        EditTool(), guarded, path="app.py", old_string="API_TOKEN=abc123", new_string="x"
    )
    assert ".env" not in error


async def test_a_match_in_a_file_holding_a_nul_byte_is_named_not_hidden(ctx) -> None:
    (ctx.workspace / "log.txt").write_bytes(b"match one\n" * 5 + b"pad\n" * 3000 + b"\x00\n")
    (ctx.workspace / "ok.txt").write_text("match two\n")
    (ctx.workspace / "secret.bin").write_bytes(b"match\x00")
    ctx.deny_read = ("secret.bin",)
    out = await call(GrepTool(), ctx, pattern="match")
    assert out.content.startswith("ok.txt:1:match two\n\n[Also matched in 1 file holding a NUL")
    assert "log.txt" in out.content and "secret.bin" not in out.content
    alone = await call(GrepTool(), ctx, pattern="match one", path="log.txt")
    assert alone.content.startswith("[Also matched in 1 file holding a NUL byte, so not shown: log")
