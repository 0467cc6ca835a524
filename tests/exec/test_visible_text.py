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


def test_bidi_overrides_and_isolates_are_written_out() -> None:
    # "Trojan Source": a right-to-left override or isolate makes code or a command read
    # as other than it is. They reached the terminal raw.
    shown = visible_text('if access != "user\u202e \u2066// admin\u2069\u2066":')
    assert shown == 'if access != "user\\u202e \\u2066// admin\\u2069\\u2066":'


def test_joiners_and_word_breaks_that_scripts_use_stay() -> None:
    # Emoji and Persian are built with joiners; Thai, Khmer and Burmese break words with
    # the zero-width space: written out, an answer in them came out with `\u200b`s.
    family = "\U0001f468\u200d\U0001f469\u200d\U0001f467"
    text = f"{family} \u0645\u200c\u06cc \u0e2a\u0e27\u0e31\u0e2a\u200b\u0e14\u0e35"
    assert visible_text(text) == text
