"""FileState, lossless decoding and atomic writes."""

from __future__ import annotations

import codecs
import os
import stat
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from lathe.atomic_write import write_atomic
from lathe.errors import ToolError
from lathe.tools.files import FileState, decode_text, with_line_endings_of


def test_utf8_text_decodes_with_lf_endings() -> None:
    content = decode_text("héllo\nwörld\n".encode())
    assert content is not None
    assert (content.text, content.encoding, content.bom, content.newline) == (
        "héllo\nwörld\n",
        "utf-8",
        b"",
        "\n",
    )


def test_bom_is_kept_out_of_the_text_and_put_back_on_encode() -> None:
    data = codecs.BOM_UTF8 + b"x = 1\r\ny = 2\r\n"
    content = decode_text(data)
    assert content is not None
    assert content.text == "x = 1\ny = 2\n"
    assert content.encode(content.text, "f") == data


def test_non_utf8_bytes_fall_back_to_latin1_losslessly() -> None:
    data = b"caf\xe9 cr\xe8me\n"
    content = decode_text(data)
    assert content is not None
    assert content.encoding == "latin-1"
    assert content.text == "café crème\n"
    assert content.encode(content.text, "f") == data


def test_utf16_with_bom_is_text() -> None:
    data = codecs.BOM_UTF16_LE + "hi\nthere\n".encode("utf-16-le")
    content = decode_text(data)
    assert content is not None
    assert content.text == "hi\nthere\n"
    assert content.encode(content.text, "f") == data


def test_nul_bytes_or_control_noise_mean_binary() -> None:
    assert decode_text(b"\x7fELF\x02\x01\x01\x00\x00\x00") is None
    assert decode_text(bytes(range(1, 32)) * 10) is None


def test_mixed_line_endings_are_left_alone() -> None:
    content = decode_text(b"a\r\nb\nc\r\n")
    assert content is not None
    assert content.newline == "\n"
    assert content.text == "a\r\nb\nc\r\n"


@pytest.mark.parametrize(
    ("new", "written"),
    [
        ("z\na\nb\nc\n", "z\r\na\r\nb\nc\r\n"),  # added first: the first line's
        ("a\nb\nb2\nc", "a\r\nb\nb2\nc"),  # added: the line before's; no end kept
        ("a\r\nB\r\nc\n", "a\r\nB\nc\r\n"),  # changed: the replaced line's
        ("a\nc\n", "a\r\nc\r\n"),  # a line dropped: the others keep theirs
    ],
)
def test_a_file_mixing_line_endings_keeps_each_lines_own(new: str, written: str) -> None:
    assert with_line_endings_of("a\r\nb\nc\r\n", new) == written


def test_encoding_a_character_the_file_cannot_hold_is_a_clear_error() -> None:
    content = decode_text(b"caf\xe9\n")
    assert content is not None
    with pytest.raises(ToolError) as info:
        content.encode("café →\n", "menu.txt")
    assert str(info.value).startswith("menu.txt is latin-1-encoded and cannot hold '→'")


@given(st.binary(max_size=300))
def test_every_decodable_file_round_trips_byte_for_byte(data: bytes) -> None:
    content = decode_text(data)
    if content is not None:
        assert content.encode(content.text, "f") == data


@given(st.text(alphabet="ab\r\n\té", max_size=60), st.sampled_from(["utf-8", "latin-1"]))
def test_line_endings_and_encodings_round_trip(text: str, encoding: str) -> None:
    data = text.encode(encoding)
    content = decode_text(data)
    assert content is not None
    assert content.encode(content.text, "f") == data


def test_a_stray_carriage_return_in_a_crlf_file_survives() -> None:
    content = decode_text(b"a\r\r\nb\r\n")
    assert content is not None
    assert content.encode(content.text, "f") == b"a\r\r\nb\r\n"


def test_stale_check_catches_a_same_size_rewrite_right_after_reading(tmp_path: Path) -> None:
    path = tmp_path / "a.txt"
    path.write_text("aaaa\n")
    state = FileState()
    state.record(path)
    state.check_not_stale(path)
    path.write_text("bbbb\n")  # same size, likely the same mtime tick
    with pytest.raises(ToolError) as info:
        state.check_not_stale(path, "a.txt")
    assert str(info.value) == (
        "a.txt was modified on disk since you last read it; read it again before editing"
    )


def test_touching_a_file_does_not_make_it_stale(tmp_path: Path) -> None:
    path = tmp_path / "a.txt"
    path.write_text("same\n")
    state = FileState()
    state.record(path)
    os.utime(path, (1, 1))
    state.check_not_stale(path)
    assert state.was_seen(path)
    assert not state.was_seen(tmp_path / "other.txt")


def test_a_deleted_file_is_reported_as_deleted(tmp_path: Path) -> None:
    path = tmp_path / "gone.txt"
    path.write_text("x\n")
    state = FileState()
    state.record(path)
    path.unlink()
    with pytest.raises(ToolError, match=r"^gone\.txt was deleted on disk since you last read"):
        state.check_not_stale(path, "gone.txt")


def test_atomic_write_keeps_mode_and_leaves_no_temp_files(tmp_path: Path) -> None:
    path = tmp_path / "run.sh"
    path.write_text("#!/bin/sh\n")
    path.chmod(0o755)
    write_atomic(path, b"#!/bin/sh\necho hi\n")
    assert path.read_bytes() == b"#!/bin/sh\necho hi\n"
    assert stat.S_IMODE(path.stat().st_mode) == 0o755
    assert os.listdir(tmp_path) == ["run.sh"]


def test_atomic_write_of_a_new_file_follows_the_umask(tmp_path: Path) -> None:
    old = os.umask(0o022)
    try:
        write_atomic(tmp_path / "new.txt", b"x")
    finally:
        os.umask(old)
    assert stat.S_IMODE((tmp_path / "new.txt").stat().st_mode) == 0o644


def test_one_valid_character_and_one_stray_byte_is_still_utf8() -> None:
    # "# © 2024" with one cp1252 apostrophe: read as latin-1, "©" showed as "Â©" and
    # the model could no longer write "→" into the file.
    from lathe.tools.files import decode_text

    content = decode_text("# © 2024 it".encode() + b"\x92s\n")
    assert content is not None and content.encoding == "utf-8" and content.bad_bytes == 1
    cp1252 = decode_text("greeting = '„Gruß“ aus Köln'\n".encode("cp1252"))
    assert cp1252 is not None and cp1252.encoding == "cp1252"
    assert cp1252.text == "greeting = '„Gruß“ aus Köln'\n"  # not latin-1's control characters
