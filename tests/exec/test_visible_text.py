"""`visible_text`: what a model, a server or a file wrote, shown to a person as it is,
with no control byte acting on their terminal."""

from __future__ import annotations

from lathe.agent.tooling import _first_line
from lathe.exec.terminal import visible_text


def test_control_bytes_are_written_out_and_tabs_and_newlines_stay() -> None:
    assert visible_text("a\x1b[2Kb\tc\nd\x07\x9b") == "a\\x1b[2Kb\tc\nd\\x07\\x9b"
    assert visible_text("touch PWNED; #\r$ ls") == "touch PWNED; #\\x0d$ ls"


def test_a_windows_line_end_is_a_line_end() -> None:
    # `\r\n` had come out as a written `\x0d` at the end of every line of a CRLF file,
    # and an event's one-line summary carried it.
    assert visible_text("one\r\ntwo\r\n") == "one\ntwo\n"
    assert _first_line("ok\r\nsecond") == "ok"
