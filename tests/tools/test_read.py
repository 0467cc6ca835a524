"""read: numbered pages, explicit notices, and clear errors for what is not text."""

from __future__ import annotations

from pathlib import Path

from tests.tools.helpers import call, call_error

from lathe.tools.base import Limits, ToolContext
from lathe.tools.read import ReadTool

read = ReadTool()


async def test_lines_are_numbered_with_a_tab(ctx: ToolContext) -> None:
    (ctx.workspace / "a.py").write_text("import os\n\nprint(os.getcwd())\n")
    out = await call(read, ctx, path="a.py")
    assert out.content == "     1\timport os\n     2\t\n     3\tprint(os.getcwd())"
    assert out.summary == "3 lines"
    assert not out.is_error


async def test_a_page_ends_with_the_offset_to_continue_from(ctx: ToolContext) -> None:
    (ctx.workspace / "long.txt").write_text("".join(f"line {n}\n" for n in range(1, 101)))
    out = await call(read, ctx, path="long.txt", offset=11, limit=5)
    assert out.content.splitlines()[:5] == [f"{n:>6}\tline {n}" for n in range(11, 16)]
    assert out.content.endswith(
        "[Showing lines 11-15 of 100. More lines follow: call read with offset=16 to continue.]"
    )
    last = await call(read, ctx, path="long.txt", offset=96)
    assert last.content.splitlines()[-1] == "   100\tline 100"
    assert "More lines follow" not in last.content


async def test_default_page_size_comes_from_the_limits(ctx: ToolContext) -> None:
    ctx.limits = Limits(read_default_lines=3)
    (ctx.workspace / "f.txt").write_text("a\nb\nc\nd\n")
    out = await call(read, ctx, path="f.txt")
    assert "call read with offset=4 to continue" in out.content


async def test_a_page_stops_at_the_output_byte_budget(ctx: ToolContext) -> None:
    ctx.limits = Limits(output_max_bytes=1000)
    (ctx.workspace / "wide.txt").write_text("".join("x" * 90 + "\n" for _ in range(50)))
    out = await call(read, ctx, path="wide.txt")
    assert len(out.content) < 1200
    shown = out.summary.split()[0]
    assert f"call read with offset={int(shown) + 1} to continue" in out.content


async def test_long_lines_are_cut_with_a_marker(ctx: ToolContext) -> None:
    ctx.limits = Limits(read_max_line_chars=20)
    (ctx.workspace / "min.js").write_text("a" * 50 + "\nshort\n")
    out = await call(read, ctx, path="min.js")
    assert out.content.splitlines() == [
        "     1\t" + "a" * 20 + " [... line cut: 50 characters in total]",
        "     2\tshort",
        "",
        "[Lines longer than 20 characters are cut; see the rest of one with bash, e.g. "
        "line 1: `sed -n '1p' min.js | cut -b 21-4020`]",
    ]


async def test_binary_file_is_an_error(ctx: ToolContext) -> None:
    (ctx.workspace / "logo.png").write_bytes(b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR")
    error = await call_error(read, ctx, path="logo.png")
    assert error == "logo.png is a binary file (16 bytes); read shows only text files"


async def test_directory_is_an_error_suggesting_ls(ctx: ToolContext) -> None:
    (ctx.workspace / "src").mkdir()
    error = await call_error(read, ctx, path="src")
    assert error == "src is a directory, not a file; use ls to list it"


async def test_empty_file_gets_a_clear_note(ctx: ToolContext) -> None:
    (ctx.workspace / "empty.py").write_bytes(b"")
    out = await call(read, ctx, path="empty.py")
    assert out.content == "empty.py is empty (0 bytes)."
    assert (out.summary, out.is_error) == ("empty", False)


async def test_non_utf8_text_is_readable_with_a_note(ctx: ToolContext) -> None:
    (ctx.workspace / "old.txt").write_bytes(b"caf\xe9\n")
    out = await call(read, ctx, path="old.txt")
    assert out.content == (
        "[note: old.txt is not UTF-8; it is shown decoded as latin-1, and edit and write "
        "keep that encoding]\n     1\tcafé"
    )


async def test_crlf_lines_show_without_carriage_returns(ctx: ToolContext) -> None:
    (ctx.workspace / "win.txt").write_bytes(b"one\r\ntwo\r\n")
    out = await call(read, ctx, path="win.txt")
    assert out.content == "     1\tone\n     2\ttwo"


async def test_missing_file_suggests_near_names(ctx: ToolContext) -> None:
    (ctx.workspace / "config.py").write_text("x = 1\n")
    error = await call_error(read, ctx, path="confg.py")
    assert error == "confg.py does not exist. Did you mean: config.py?"
    error = await call_error(read, ctx, path="nothing/like/this.rs")
    assert error == "nothing/like/this.rs does not exist. Use ls or glob to find the right path."


async def test_offset_past_the_end_says_how_long_the_file_is(ctx: ToolContext) -> None:
    (ctx.workspace / "short.txt").write_text("a\nb\n")
    error = await call_error(read, ctx, path="short.txt", offset=10)
    assert error == "short.txt has 2 lines; offset 10 is past the end"


async def test_reading_records_the_file_as_seen(ctx: ToolContext) -> None:
    path = ctx.workspace / "seen.txt"
    path.write_text("x\n")
    await call(read, ctx, path="seen.txt", limit=1)
    assert ctx.file_state.was_seen(path.resolve())


async def test_files_in_the_spill_dir_can_be_read(ctx: ToolContext) -> None:
    ctx.spill_dir.mkdir()
    spill = ctx.spill_dir / "out.log"
    spill.write_text("first\nsecond\n")
    out = await call(read, ctx, path=str(spill), offset=2)
    assert out.content == "     2\tsecond"


async def test_huge_files_are_paged_without_loading_them(ctx: ToolContext, tmp_path: Path) -> None:
    big = ctx.workspace / "big.log"
    with big.open("w") as handle:
        for n in range(1, 1_100_001):
            handle.write(f"entry {n:08d}\n")  # ~17 MB, past the whole-file limit
    out = await call(read, ctx, path="big.log", offset=1_000_000, limit=2)
    assert out.content.splitlines()[:2] == ["1000000\tentry 01000000", "1000001\tentry 01000001"]
    assert out.content.endswith("call read with offset=1000002 to continue.]")


async def test_the_page_budget_counts_bytes_not_characters(ctx) -> None:
    (ctx.workspace / "cjk.txt").write_text("漢字" * 20 + "\n" * 1 + ("漢字" * 20 + "\n") * 2999)
    out = await call(ReadTool(), ctx, path="cjk.txt")
    assert len(out.content.encode()) <= ctx.limits.output_max_bytes + 200
    assert "More lines follow" in out.content


async def test_a_file_mixing_line_endings_shows_no_carriage_returns(ctx: ToolContext) -> None:
    # The CR of each CRLF line in a file that also has LF lines was shown as part of the
    # line, and an edit copying it matched nothing.
    (ctx.workspace / "mixed.py").write_bytes(b"a = 1\r\nb = 2\nc = 3\r\n")
    out = await call(read, ctx, path="mixed.py")
    assert out.content == "     1\ta = 1\n     2\tb = 2\n     3\tc = 3"


async def test_a_cp1252_euro_sign_shows_as_the_euro_sign(ctx: ToolContext) -> None:
    (ctx.workspace / "price.py").write_bytes(b'price = "\x80 5"  # caf\xe9\n')
    out = await call(read, ctx, path="price.py")
    assert out.content.endswith('     1\tprice = "€ 5"  # café'), out.content
