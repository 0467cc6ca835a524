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


def test_bidi_overrides_and_invisible_spaces_are_written_out() -> None:
    # "Trojan Source": a right-to-left override makes code or a command read as other
    # than it is; a zero-width space hides inside a word. They reached the terminal raw.
    shown = visible_text('if access != "user\u202e \u2066// admin\u2069\u2066":\u200b')
    assert shown == 'if access != "user\\u202e \\u2066// admin\\u2069\\u2066":\\u200b'


def test_joiners_that_build_emoji_and_scripts_stay() -> None:
    family = "\U0001f468\u200d\U0001f469\u200d\U0001f467"
    assert visible_text(f"{family} \u0645\u200c\u06cc") == f"{family} \u0645\u200c\u06cc"
