"""A command's output as a terminal would have shown it, for the model.

Programs write for a screen: colour codes, a progress bar redrawn with `\\r` a hundred
times, runs of NUL bytes. Sent as they came, each ANSI code and each frame costs tokens
and shows the model nothing a person saw (a NUL is six bytes as JSON), so: escape
sequences are dropped, a line redrawn with `\\r` keeps only its last frame, and a run of
other control bytes becomes one U+FFFD. Tabs and newlines stay. The spill file keeps
the output exactly as it came.
"""

from __future__ import annotations

import re

_ESCAPE = re.compile(
    r"\x1b\[[0-?]*[ -/]*[@-~]"  # CSI: colours, cursor moves, clears
    r"|\x1b\][^\x07\x1b\n]*(?:\x07|\x1b\\)"  # OSC: titles, links (ended; an open one stays)
    r"|\x1b[@-Z\\-_]"  # the other two-byte escapes
)
_CONTROL_RUN = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]+")
_REDRAWN = re.compile(r"^[^\n]*\r(?!\n|$)", re.MULTILINE)  # from a line's start: linear


def terminal_text(output: str) -> str:
    """`output` without escape sequences, redrawn frames or runs of control bytes."""
    if not _NEEDS_WORK.search(output):  # most outputs: one scan in C
        return output
    output = _ESCAPE.sub("", output)
    output = _REDRAWN.sub("", output)  # each frame a later `\r` drew over
    return _CONTROL_RUN.sub("\ufffd", output)


_NEEDS_WORK = re.compile(r"[\x00-\x08\x0b-\x1f\x7f]")


# Control bytes but tab and newline; and the characters that make text read as other than
# it is: bidi embeddings, overrides and isolates ("Trojan Source"). Not the zero-width
# characters: emoji and Persian are built with joiners, and Thai, Khmer and Burmese break
# words with the zero-width space.
_INVISIBLE = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")


def visible_text(text: str) -> str:
    """`text` to show a person as it is: each control byte but tab and newline written
    out (`\\x1b`), so none acts on their terminal, and each bidi control (`\\u202e`), so
    none makes it read as other text. For what a model or a server
    wrote (a reply, a diff, a command to approve): `touch PWNED; #\\x1b[2K\\x1b[1G $ ls` had
    shown as `$ ls` in an approval prompt, and a `\\r` would hide the same way."""
    if not _INVISIBLE.search(text):
        return text
    text = text.replace("\r\n", "\n")  # a Windows line end is a line end, not a `\x0d`
    return _INVISIBLE.sub(lambda match: _written_out(match.group()), text)


def visible_name(name: str) -> str:
    """A file's name (a path) to show a person, on one line: each character that is not
    printable written out, newlines and tabs too (`\\x0a`, `\\u202e`; a byte that is not
    UTF-8, as `os.fsdecode` keeps it, as itself: `\\xff`), so that a name can neither act
    on their terminal (move the cursor, set the clipboard with OSC 52), split the line
    it is on, nor read as another (a right-to-left override). The one rule for names in
    lathe's reports and errors (`lathe undo`, /undo); what a model or a server wrote is
    `visible_text`'s."""
    if name.isprintable():
        return name
    return "".join(c if c.isprintable() else _written_out(c) for c in name)


def _written_out(char: str) -> str:
    code = ord(char)
    if 0xDC80 <= code <= 0xDCFF:  # a byte that is not UTF-8, as surrogateescape keeps it
        return f"\\x{code - 0xDC00:02x}"
    if code <= 0xFF:
        return f"\\x{code:02x}"
    return f"\\u{code:04x}" if code <= 0xFFFF else f"\\U{code:08x}"
