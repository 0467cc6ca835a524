"""The executor's output fits the bytes it was given *as the model gets it*, cleaned
(`exec/terminal`), its marker included, and the numbers in the marker and the paging
notice count the raw bytes of the spill file. A run of control bytes is one U+FFFD (3
bytes), an invalid byte one U+FFFD each: an output cut to fit grew past the cap when
cleaned and was cut again by the tool output cap (two notices, two spill files); and
the notice's `tail -c +BYTE` counted the cleaned head, not the file's bytes."""

from __future__ import annotations

import re
from pathlib import Path

from tests.tools.helpers import call

from lathe.exec.local import LocalExecutor
from lathe.exec.output import cap_output
from lathe.exec.terminal import terminal_text
from lathe.tools.base import Limits, ToolContext
from lathe.tools.bash import NOTES_ROOM, BashTool

_MARKER = re.compile(r"\n\[\.\.\. [^\n]*bytes omitted[^\n]*\.\.\.\]\n")


async def _run(command: str, tmp_path: Path, limit: int):
    return await LocalExecutor().run(
        command, cwd=tmp_path, timeout=30, max_output_bytes=limit, spill_dir=tmp_path / "spill"
    )


def _assert_the_marker_counts_the_spill(output: str, spill: Path) -> None:
    """The marker's byte and count name exactly the spill file's bytes left out."""
    raw = spill.read_bytes()
    marker = _MARKER.search(output)
    head, tail = output[: marker.start()], output[marker.end() :]
    numbers = re.fullmatch(
        r"\n\[\.\.\. from byte ([\d,]+): ([\d,]+) bytes omitted \.\.\.\]\n", marker[0]
    )
    start, omitted = (int(n.replace(",", "")) for n in numbers.groups())
    assert terminal_text(raw[: start - 1].decode("utf-8", "replace")) == head
    assert terminal_text(raw[start - 1 + omitted :].decode("utf-8", "replace")) == tail


async def test_control_bytes_that_grow_when_cleaned_still_fit_when_cut(tmp_path: Path) -> None:
    rows = 'for i in $(seq 1 2900); do printf "row$i\\x01\\x02\\n"; done; echo END'
    result = await _run(rows, tmp_path, 29_400)
    assert result.truncated
    assert len(result.output.encode()) <= 29_400
    assert len(_MARKER.findall(result.output)) == 1
    assert result.output.endswith("row2900\ufffd\nEND\n")
    _assert_the_marker_counts_the_spill(result.output, result.full_output_path)


async def test_an_output_under_the_limit_that_grows_past_it_when_cleaned_is_cut(
    tmp_path: Path,
) -> None:
    # 2,000 raw bytes, 5,000 once each invalid byte is a U+FFFD: over a 3,000-byte cap.
    result = await _run("head -c 1500 /dev/zero | tr '\\0' '\\377'; seq 1 100", tmp_path, 3000)
    assert result.truncated and result.full_output_path is not None
    assert len(result.output.encode()) <= 3000
    assert result.output.endswith("99\n100\n")
    raw = result.full_output_path.read_bytes()
    assert raw == b"\xff" * 1500 + b"".join(b"%d\n" % n for n in range(1, 101))
    _assert_the_marker_counts_the_spill(result.output, result.full_output_path)
    assert "\n2\n3\n4\n" in result.output  # the tail is not only the last line or two


async def test_the_marker_counts_the_spill_files_bytes(tmp_path: Path) -> None:
    colours = (
        "python3 -c \"import sys; sys.stdout.write(''.join("
        "f'\\x1b[31m{i:07d}\\x1b[0m,' for i in range(30000)))\""
    )
    result = await _run(colours, tmp_path, 5000)
    _assert_the_marker_counts_the_spill(result.output, result.full_output_path)
    assert len(result.output.encode()) <= 5000
    assert "\x1b" not in result.output and "\ufffd" not in result.output  # no code cut in two


async def test_the_notice_for_a_long_coloured_line_names_the_raw_byte(
    ctx: ToolContext, tmp_path: Path
) -> None:
    ctx.limits = Limits(output_max_bytes=8000)
    colours = (
        "python3 -c \"import sys; sys.stdout.write(''.join("
        "f'\\x1b[31m{i:07d}\\x1b[0m,' for i in range(300000)))\""
    )
    out = await call(BashTool(), ctx, command=colours)
    spill = Path(out.details["full_output_path"])
    start = int(re.search(r"`tail -c \+(\d+) ", out.content)[1])
    head = out.content[: _MARKER.search(out.content).start()]
    assert terminal_text(spill.read_bytes()[: start - 1].decode()) == head
    assert len(out.content.encode()) <= 8000


def test_text_a_tool_holds_is_capped_to_fit_once_cleaned(tmp_path: Path) -> None:
    data = b"".join(b"line %d \x01\n" % n for n in range(5000))
    kept, spill = cap_output(data, 4000 - NOTES_ROOM, tmp_path)
    assert spill is not None and spill.read_bytes() == data
    assert len(kept.encode()) <= 4000 - NOTES_ROOM
    _assert_the_marker_counts_the_spill(kept, spill)


def test_multibyte_characters_cut_at_the_edges_are_counted_where_they_lie(tmp_path) -> None:
    data = "é€😀".encode() * 2000  # 9 bytes a round, no line break
    for limit in (1000, 1001, 1002, 1003):
        kept, spill = cap_output(data, limit, tmp_path)
        assert "\ufffd" not in kept and len(kept.encode()) <= limit
        _assert_the_marker_counts_the_spill(kept, spill)
