"""write: creates freely, replaces only what the agent has read and is still current."""

from __future__ import annotations

from tests.tools.helpers import call, call_error

from lathe.tools.base import ToolContext
from lathe.tools.read import ReadTool
from lathe.tools.write import WriteTool

write = WriteTool()


async def test_creates_a_file_and_its_parent_directories(ctx: ToolContext) -> None:
    out = await call(write, ctx, path="pkg/sub/mod.py", content="x = 1\ny = 2\n")
    assert (ctx.workspace / "pkg/sub/mod.py").read_text() == "x = 1\ny = 2\n"
    assert out.content == "Created pkg/sub/mod.py (2 lines)."
    assert out.summary == "created, 2 lines"
    assert out.details == {"path": "pkg/sub/mod.py", "created": True}


async def test_content_is_written_verbatim(ctx: ToolContext) -> None:
    await call(write, ctx, path="raw.txt", content="a\r\nb\tc\x1b[0m\nno newline")
    assert (ctx.workspace / "raw.txt").read_bytes() == b"a\r\nb\tc\x1b[0m\nno newline"


async def test_replacing_an_unread_file_is_refused_and_it_stays_unchanged(
    ctx: ToolContext,
) -> None:
    path = ctx.workspace / "keep.txt"
    path.write_text("precious\n")
    error = await call_error(write, ctx, path="keep.txt", content="gone\n")
    assert error == (
        "keep.txt already exists and you have not read it in this session. Read it first, "
        "then use edit to change part of it (or write to replace it whole)"
    )
    assert path.read_text() == "precious\n"


async def test_replacing_a_read_file_works_and_shows_a_diff(ctx: ToolContext) -> None:
    path = ctx.workspace / "notes.md"
    path.write_text("one\ntwo\n")
    await call(ReadTool(), ctx, path="notes.md")
    out = await call(write, ctx, path="notes.md", content="one\n2\nthree\n")
    assert path.read_text() == "one\n2\nthree\n"
    assert out.content.startswith("Overwrote notes.md (3 lines, was 2).\n\n")
    assert out.details["created"] is False
    assert "-two\n+2\n+three\n" in out.details["diff"]


async def test_a_file_written_in_this_session_can_be_written_again(ctx: ToolContext) -> None:
    await call(write, ctx, path="gen.txt", content="v1\n")
    await call(write, ctx, path="gen.txt", content="v2\n")
    assert (ctx.workspace / "gen.txt").read_text() == "v2\n"


async def test_replacing_a_file_changed_since_reading_is_refused(ctx: ToolContext) -> None:
    path = ctx.workspace / "cfg.ini"
    path.write_text("a=1\n")
    await call(ReadTool(), ctx, path="cfg.ini")
    path.write_text("a=2\n")
    error = await call_error(write, ctx, path="cfg.ini", content="a=3\n")
    assert error == (
        "cfg.ini was modified on disk since you last read it; read it again before editing"
    )
    assert path.read_text() == "a=2\n"


async def test_overwrite_keeps_crlf_and_encoding(ctx: ToolContext) -> None:
    path = ctx.workspace / "legacy.txt"
    path.write_bytes(b"caf\xe9\r\nbar\r\n")
    await call(ReadTool(), ctx, path="legacy.txt")
    await call(write, ctx, path="legacy.txt", content="thé\nbar\nbaz\n")
    assert path.read_bytes() == b"th\xe9\r\nbar\r\nbaz\r\n"


async def test_a_directory_or_a_file_as_parent_is_an_error(ctx: ToolContext) -> None:
    (ctx.workspace / "dir").mkdir()
    (ctx.workspace / "plain.txt").write_text("x\n")
    assert await call_error(write, ctx, path="dir", content="x") == (
        "dir is a directory; give a file path to write"
    )
    error = await call_error(write, ctx, path="plain.txt/inner.txt", content="x")
    assert error.startswith("cannot write plain.txt/inner.txt: ")
    assert (ctx.workspace / "plain.txt").read_text() == "x\n"


async def test_a_replacement_that_elides_code_is_refused(ctx: ToolContext) -> None:
    path = ctx.workspace / "chunks.py"
    original = "def chunked(items, size):\n    out = []\n    return out\n"
    path.write_text(original)
    await call(ReadTool(), ctx, path="chunks.py")

    error = await call_error(
        write, ctx, path="chunks.py", content="def chunked(items, size):\n    # ...\n"
    )

    assert error.startswith("not written: the new content of chunks.py has a placeholder")
    assert "'# ...'" in error and "Use edit" in error
    assert path.read_text() == original


async def test_placeholders_already_in_the_file_or_in_new_files_are_fine(ctx: ToolContext) -> None:
    await call(write, ctx, path="notes.py", content="# ... see docs\nx = 1\n")
    out = await call(write, ctx, path="notes.py", content="# ... see docs\nx = 2\n")
    assert not out.is_error
    assert (ctx.workspace / "notes.py").read_text() == "# ... see docs\nx = 2\n"


async def test_with_small_windows_write_only_creates(ctx: ToolContext) -> None:
    ctx.limits.write_may_replace = False
    path = ctx.workspace / "app.py"
    path.write_text("x = 1\n")
    await call(ReadTool(), ctx, path="app.py")

    error = await call_error(write, ctx, path="app.py", content="x = 2\n")

    assert error.startswith("app.py already exists; write only creates new files here.")
    assert path.read_text() == "x = 1\n"
    await call(write, ctx, path="new.py", content="y = 1\n")
    assert (ctx.workspace / "new.py").read_text() == "y = 1\n"


async def test_a_blind_edit_does_not_license_replacing_the_whole_file(ctx: ToolContext) -> None:
    from lathe.tools.edit import EditTool

    path = ctx.workspace / "app.py"
    original = "".join(f"line_{n} = {n}\n" for n in range(600))
    path.write_text(original)
    await call(EditTool(), ctx, path="app.py", old_string="line_3 = 3\n", new_string="line_3 = 4\n")
    error = await call_error(write, ctx, path="app.py", content="x = 1\ny = 2\n")
    assert "app.py" in error and "you have not read all of it" in error
    assert "use edit" in error
    assert path.read_text().count("\n") == 600


async def test_one_page_of_a_long_file_does_not_license_replacing_it(ctx: ToolContext) -> None:
    path = ctx.workspace / "long.py"
    path.write_text("".join(f"v{n} = {n}\n" for n in range(3000)))
    await call(ReadTool(), ctx, path="long.py", limit=5)
    error = await call_error(write, ctx, path="long.py", content="gone\n")
    assert "you have not read all of it (lines 1-5 of 3000)" in error
    assert path.read_text().count("\n") == 3000


async def test_every_page_read_licenses_the_rewrite(ctx: ToolContext) -> None:
    path = ctx.workspace / "long.py"
    path.write_text("".join(f"v{n} = {n}\n" for n in range(30)))
    for offset in (1, 11, 21):
        await call(ReadTool(), ctx, path="long.py", offset=offset, limit=10)
    await call(write, ctx, path="long.py", content="short = 1\n")
    assert path.read_text() == "short = 1\n"


async def test_an_edit_after_a_whole_read_keeps_the_file_known(ctx: ToolContext) -> None:
    from lathe.tools.edit import EditTool

    path = ctx.workspace / "m.py"
    path.write_text("a = 1\nb = 2\n")
    await call(ReadTool(), ctx, path="m.py")
    await call(EditTool(), ctx, path="m.py", old_string="a = 1", new_string="a = 10")
    await call(write, ctx, path="m.py", content="a = 10\nb = 20\n")
    assert path.read_text() == "a = 10\nb = 20\n"


async def test_a_read_only_file_is_not_replaced(ctx: ToolContext) -> None:
    path = ctx.workspace / "ro.txt"
    path.write_text("keep\n")
    await call(ReadTool(), ctx, path="ro.txt")
    path.chmod(0o444)
    error = await call_error(write, ctx, path="ro.txt", content="changed\n")
    assert error.startswith("ro.txt is read-only")
    assert path.read_text() == "keep\n"


async def test_a_file_mixing_line_endings_keeps_its_lines_endings(ctx: ToolContext) -> None:
    path = ctx.workspace / "mixed.txt"
    path.write_bytes(b"a\r\nb\nc\n")
    await call(ReadTool(), ctx, path="mixed.txt")
    await call(write, ctx, path="mixed.txt", content="a\r\nb\nc\nd\n")
    assert path.read_bytes() == b"a\r\nb\nc\nd\n"


async def test_a_real_replacement_character_is_judged_by_its_own_line(ctx: ToolContext) -> None:
    # The U+FFFD refusal counted per file: a new line with a real U+FFFD was refused
    # (naming an unchanged line), and a changed stray-byte line passed when a line
    # with a real one was dropped.
    path = ctx.workspace / "m.py"
    path.write_bytes("real = '\ufffd'\n".encode() + b"sep = '\xa7'  # s\n")
    await call(ReadTool(), ctx, path="m.py")
    kept = "real = '\ufffd'\nsep = '\ufffd'  # s\nmore = '\ufffd'\n"
    assert "line 3" in await call_error(WriteTool(), ctx, path="m.py", content=kept)
    dropped = "sep = '\ufffd'  # section\n"
    assert "line 1" in await call_error(WriteTool(), ctx, path="m.py", content=dropped)
    assert path.read_bytes() == "real = '\ufffd'\n".encode() + b"sep = '\xa7'  # s\n"
