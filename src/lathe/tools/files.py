"""What file tools share: what the agent has seen, text decoding, diffs (atomic writes
are `lathe.atomic_write`).

Decoding is lossless so that an edit rewrites only what it was asked to: UTF-8 (with
its BOM kept), UTF-16 with a BOM, UTF-8 with a few bytes that are not (each kept as a
lone surrogate, shown as U+FFFD and written back as the byte it was), and any other
bytes as cp1252 where its characters in 0x80-0x9f (€, “, ”) are there and it defines them
all, else as latin-1, which maps every byte to one character and back. CRLF files are
handed to tools with LF line endings and written back with CRLF; a file mixing both is
handed over as it is, and each line a change keeps keeps its ending
(`with_line_endings_of`).
"""

from __future__ import annotations

import codecs
import contextlib
import difflib
import hashlib
import os
import re
import stat
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

from lathe.errors import ToolError
from lathe.plural import plural
from lathe.tools.base import ToolContext

MAX_TEXT_BYTES = 16 * 1024 * 1024  # larger files are paged by read, never edited whole
_SNIFF_BYTES = 8192
_BOMS = (
    (codecs.BOM_UTF8, "utf-8"),
    (codecs.BOM_UTF16_LE, "utf-16-le"),
    (codecs.BOM_UTF16_BE, "utf-16-be"),
)
_ESCAPED_BYTE = re.compile("[\udc80-\udcff]")
# Control bytes that do not occur in text; tab, newlines, form feed and escape do.
_NON_TEXT = frozenset(range(0x20)) - {0x08, 0x09, 0x0A, 0x0C, 0x0D, 0x1B}

# A line standing for code the model left out: "# ...", "// ... existing code ...",
# "# rest of the code unchanged". Written into a whole-file replacement, it deletes that
# code — the commonest way small models destroy a file.
_ELISION = re.compile(
    r"^\s*(#|//|/\*|--|<!--)\s*(\.\.\.|…|\[?\.\.\.|(the )?rest of|existing code|"
    r"(code )?(remains|unchanged)|same as before)",
    re.IGNORECASE | re.MULTILINE,
)


def elided_lines(text: str) -> list[str]:
    return [m.group(0).strip() for m in _ELISION.finditer(text)]


def added_elisions(old: str, new: str) -> list[str]:
    """The placeholders for left-out code `new` has that `old` did not, sorted."""
    return sorted(set(elided_lines(new)) - set(elided_lines(old)))


@dataclass(frozen=True)
class _Seen:
    mtime_ns: int
    size: int
    digest: str
    lines_shown: tuple[tuple[int, int], ...] | None = None
    """The line ranges read showed of this content, merged; None: all of it is known."""
    total_lines: int = 0


class FileState:
    """Per resolved path, what the agent last saw of a file when it read or wrote it:
    its content (to refuse changes made behind its back) and whether it saw all of it
    (a whole-file write needs that: else the lines it never saw are lost)."""

    def __init__(self) -> None:
        self._seen: dict[Path, _Seen] = {}

    def record(self, path: Path, data: bytes | None = None, *, whole: bool = True) -> None:
        """Remember `path` as seen now; `data` is its content when the caller has it.
        `whole=False`: the agent knows only part of it (an edit of a file it had not read
        in full)."""
        if data is None:
            data = path.read_bytes()
        info = path.stat()
        shown = None if whole else ()
        self._seen[path] = _Seen(info.st_mtime_ns, info.st_size, _digest(data), shown)

    def record_lines(
        self, path: Path, data: bytes, shown: list[tuple[int, int]], total: int
    ) -> None:
        """Remember that read showed the line ranges `shown` (first, last) of the `total`
        lines of this content; the pages of one content add up, and all of them make the
        file known whole."""
        before = self._seen.get(path)
        digest = _digest(data)
        ranges = list(shown)
        if before is not None and before.digest == digest:
            if before.lines_shown is None:
                return
            ranges += before.lines_shown
        merged = _merge(ranges)
        whole = merged == [(1, total)] or total == 0
        info = path.stat()
        self._seen[path] = _Seen(
            info.st_mtime_ns, info.st_size, digest, None if whole else tuple(merged), total
        )

    def was_seen(self, path: Path) -> bool:
        return path in self._seen

    def knows_whole(self, path: Path) -> bool:
        seen = self._seen.get(path)
        return seen is not None and seen.lines_shown is None

    def lines_shown(self, path: Path) -> str:
        """What part of `path` the agent saw, for a message: "lines 1-5 of 3000"."""
        seen = self._seen.get(path)
        if seen is None or not seen.lines_shown:
            return "none of it"
        spans = ", ".join(f"{a}-{b}" if a != b else str(a) for a, b in seen.lines_shown)
        return f"lines {spans} of {seen.total_lines}"

    def forget(self, path: Path) -> None:
        self._seen.pop(path, None)

    def check_not_stale(
        self, path: Path, shown: str | None = None, data: bytes | None = None
    ) -> None:
        """Raise ToolError when the file changed on disk since it was last seen;
        `data` is its current content when the caller has just read it.

        The content hash decides, not the mtime: a coarse clock can give a quick
        rewrite the same mtime, and a `touch` is no reason to refuse an edit."""
        seen = self._seen.get(path)
        if seen is None:
            return
        name = shown or str(path)
        if data is None:
            try:
                data = path.read_bytes()
            except FileNotFoundError:
                raise ToolError(
                    f"{name} was deleted on disk since you last read it; check with ls "
                    f"before writing it again"
                ) from None
        if len(data) != seen.size or _digest(data) != seen.digest:
            raise ToolError(
                f"{name} was modified on disk since you last read it; read it again before editing"
            )


def _merge(ranges: list[tuple[int, int]]) -> list[tuple[int, int]]:
    merged: list[tuple[int, int]] = []
    for first, last in sorted(ranges):
        if merged and first <= merged[-1][1] + 1:
            merged[-1] = (merged[-1][0], max(merged[-1][1], last))
        else:
            merged.append((first, last))
    return merged


def state_of(ctx: ToolContext) -> FileState:
    """The run's FileState; made on first use when the face that built ctx gave none."""
    if ctx.file_state is None:
        ctx.file_state = FileState()
    state: FileState = ctx.file_state
    return state


def _digest(data: bytes) -> str:
    return hashlib.blake2b(data, digest_size=16).hexdigest()


@dataclass(frozen=True)
class TextContent:
    """A file's text plus what is needed to write it back byte-compatible."""

    text: str  # LF line endings when `newline` is CRLF
    encoding: str
    bom: bytes = b""
    newline: str = "\n"
    errors: str = "strict"
    """"surrogateescape": UTF-8 text with bytes that are not, kept as they were."""
    lf_at_end: bool = False
    """A CRLF file whose last line ends in LF alone (a common editor's doing)."""

    @property
    def bad_bytes(self) -> int:
        return len(_ESCAPED_BYTE.findall(self.text)) if self.errors != "strict" else 0

    @property
    def mixes_endings(self) -> bool:
        """LF and CRLF lines, each written back with its own (`with_line_endings_of`)."""
        return self.newline == "\n" and "\r\n" in self.text

    @property
    def is_utf8(self) -> bool:
        return self.encoding == "utf-8"

    def encode(self, text: str, shown: str) -> bytes:
        """`text` (LF endings) in this file's encoding, BOM and line endings."""
        if self.newline == "\r\n":
            text = text.replace("\n", "\r\n")
            if self.lf_at_end and text.endswith("\r\n"):
                text = text[:-2] + "\n"
        try:
            return self.bom + text.encode(self.encoding, self.errors)
        except UnicodeEncodeError as exc:
            bad = exc.object[exc.start : exc.end]
            raise ToolError(
                f"{shown} is {self.encoding}-encoded and cannot hold {bad!r}; use only "
                f"characters that encoding has (or an escape the file's language allows)"
            ) from None


def looks_binary(data: bytes) -> bool:
    sample = data[:_SNIFF_BYTES]
    if any(sample.startswith(bom) for bom, _ in _BOMS[1:]):
        return False  # UTF-16 text is full of NUL bytes
    if b"\x00" in sample:
        return True
    odd = sum(1 for byte in sample if byte in _NON_TEXT)
    return odd > len(sample) // 10


def decode_text(data: bytes) -> TextContent | None:
    """The text of a file's bytes, or None when the bytes are not text."""
    if looks_binary(data):
        return None
    bom, encoding = b"", "utf-8"
    for candidate, name in _BOMS:
        if data.startswith(candidate):
            bom, encoding = candidate, name
            break
    body = data[len(bom) :]
    errors = "strict"
    try:
        text = body.decode(encoding)
    except UnicodeDecodeError:
        if bom and encoding != "utf-8":
            return None
        text = body.decode("utf-8", "surrogateescape")
        # UTF-8 with a stray byte, not latin-1 (a UTF-8 BOM says so whatever the count).
        if bom or _mostly_utf8(text):
            errors = "surrogateescape"
        else:
            encoding = _single_byte_encoding(body)
            text = body.decode(encoding)
    newline = "\n"
    crlf, lf = text.count("\r\n"), text.count("\n")
    lf_at_end = 0 < crlf == lf - 1 and text.endswith("\n") and not text.endswith("\r\n")
    if crlf and (crlf == lf or lf_at_end):
        newline, text = "\r\n", text.replace("\r\n", "\n")
    return TextContent(
        text=text,
        encoding=encoding,
        bom=bom,
        newline=newline,
        errors=errors,
        lf_at_end=lf_at_end,
    )


_CP1252_PRINTABLE = re.compile(rb"[\x80-\x9f]")
_CP1252_UNDEFINED = re.compile(rb"[\x81\x8d\x8f\x90\x9d]")


def _single_byte_encoding(body: bytes) -> str:
    """cp1252 for bytes in 0x80-0x9f it defines: there latin-1 has control characters,
    and a Windows file its € and curly quotes; both decode and encode back losslessly."""
    if _CP1252_PRINTABLE.search(body) and not _CP1252_UNDEFINED.search(body):
        return "cp1252"
    return "latin-1"


def _mostly_utf8(text: str) -> bool:
    """Whether bytes decoded as UTF-8 (stray bytes kept as lone surrogates) hold at least
    as many valid multi-byte characters as stray bytes: cp1252's "Gruß“" holds one valid pair
    by chance among its stray bytes, and edits wrote UTF-8 into it."""
    stray = len(_ESCAPED_BYTE.findall(text))
    return sum(1 for char in text if char > "\x7f") - stray >= stray


def printable(text: str) -> str:
    """`text` with each byte kept as a lone surrogate shown as U+FFFD: what a model, a
    session file or an event can hold (a lone surrogate is not valid UTF-8)."""
    if not _ESCAPED_BYTE.search(text):
        return text
    return text.encode("utf-8", "surrogateescape").decode("utf-8", "replace")


_STRAY_RUN = re.compile("[\udc80-\udcff]+")


class ShownText:
    """A text with stray bytes (lone surrogates, see `decode_text`) beside the text the
    model was shown (`printable`: each stretch of them as U+FFFD), and the way back from
    what the model copied out of the shown one: else a copied line would be written
    with U+FFFD's three bytes where the file had its own."""

    def __init__(self, text: str) -> None:
        self.text = text
        # (start in shown, start in text, the stretch as shown, as it is) per stretch.
        self._strays: list[tuple[int, int, str, str]] = []
        parts: list[str] = []
        shown_at = taken = 0
        for match in _STRAY_RUN.finditer(text):
            parts.append(text[taken : match.start()])
            shown_at += match.start() - taken
            as_shown = printable(match.group())
            self._strays.append((shown_at, match.start(), as_shown, match.group()))
            parts.append(as_shown)
            shown_at += len(as_shown)
            taken = match.end()
        parts.append(text[taken:])
        self.shown = "".join(parts)

    def span_in_text(self, start: int, end: int) -> tuple[int, int] | None:
        """Where a stretch of the shown text lies in the text; None when it starts or
        ends inside a stretch of stray bytes shown shorter than it is."""
        first, last = self._in_text(start), self._in_text(end)
        return None if first is None or last is None else (first, last)

    def _in_text(self, at: int) -> int | None:
        shift = 0
        for shown_start, start, as_shown, stray in self._strays:
            if at <= shown_start:
                break
            if at < shown_start + len(as_shown):
                inside = at - shown_start
                return start + inside if len(as_shown) == len(stray) else None
            shift += len(stray) - len(as_shown)
        return at + shift

    def put_back(self, copied: str, source: str) -> str:
        """`copied` with the stray bytes of `source` (a stretch of the text) back where
        it shows them, in their order; U+FFFD it shows beyond them stays."""
        out, at = [], 0
        for match in _STRAY_RUN.finditer(source):
            as_shown = printable(match.group())
            found = copied.find(as_shown, at)
            if found == -1:
                break
            out += [copied[at:found], match.group()]
            at = found + len(as_shown)
        return "".join(out) + copied[at:]

    def with_own_lines(self, copied: str, name: str) -> str:
        """`copied` (a whole new text of the file `name`) with each line that shows as
        one of the text's lines holding stray bytes put back as that line: the line at
        its place (`line_places`), else the one line that shows so. ToolError when lines
        differing only in such bytes show so and its place does not tell which it is."""
        if not self._strays or "\ufffd" not in copied:
            return copied
        own, lines = self.text.split("\n"), copied.split("\n")
        alike: dict[str, dict[str, int]] = {}
        for number, line in enumerate(own, 1):
            if _STRAY_RUN.search(line):
                alike.setdefault(printable(line), {}).setdefault(line, number)
        out = []
        for number, (line, (place, same)) in enumerate(
            zip(lines, line_places(own, lines, key=printable), strict=True), 1
        ):
            found = alike.get(line, {})
            if same:
                out.append(own[place])
            elif len(found) > 1:
                at = " and ".join(map(str, sorted(found.values())))
                raise ToolError(
                    f"not written: line {number} of the new content shows as lines {at} "
                    f"of {name} do, which differ in bytes that are not UTF-8 (shown as "
                    "\ufffd), and where it stands does not tell which of them it is. Keep "
                    "that line where it was, or use edit (it keeps such bytes)."
                )
            else:
                out.append(next(iter(found), line))
        return "\n".join(out)


def line_places(
    old: list[str], new: list[str], key: Callable[[str], str] = str
) -> list[tuple[int, bool]]:
    """For each of the `new` lines, its place among the `old` ones (not empty) and
    whether it is that line unchanged, by a diff alignment: lines the same to the byte
    at the start and end, then the rest matched in order by `key`. A changed line's
    place is the line it replaces (the last, past their number), an added line's the
    line before it (the first line, at the start). A line that is the same as an old
    line only elsewhere is not taken for it: two lines showing alike kept only the
    first one's bytes."""
    head, tail = _common_ends(old, new)
    places = [(n, True) for n in range(head)]
    for tag, i1, i2, j1, j2 in _middle_opcodes(old, new, head, tail, key):
        for k in range(j2 - j1):
            if tag == "equal":
                places.append((i1 + k, True))
            elif tag == "replace":
                places.append((min(i1 + k, i2 - 1), False))
            else:
                places.append((max(i1 - 1, 0), False))
    return places + [(len(old) - tail + n, True) for n in range(tail)]


def with_line_endings_of(old: str, new: str) -> str:
    """`new`, a new version of `old` (a text mixing LF and CRLF lines), with each line
    ending in CRLF where the line at its place in `old` does (`line_places`, matching
    lines without their CR): a line kept keeps its ending, a changed line takes the
    ending of the line it replaces, an added line that of the line before it. The
    endings written in `new` do not count: models write LF, whatever read showed."""
    before, after = old.split("\n"), new.split("\n")
    places = line_places(before, after, key=lambda line: printable(line.removesuffix("\r")))
    ended = [
        line.removesuffix("\r") + ("\r" if before[place].endswith("\r") else "")
        for line, (place, _) in zip(after[:-1], places, strict=False)
    ]
    return "\n".join([*ended, after[-1]])


Change = tuple[str, int, int, int, int]  # difflib's opcode: tag, old[i1:i2], new[j1:j2]


def _middle_opcodes(
    old: list[str], new: list[str], head: int, tail: int, key: Callable[[str], str] = str
) -> list[Change]:
    """difflib's opcodes for the lines between the `head` and `tail` lines `old` and
    `new` share (`_common_ends`), as indexes into the whole lists: compared whole,
    difflib takes a line repeated through a long file for noise ("autojunk"), and had
    shown a one-line edit in a file of repeated rows as a rewrite of every line; given
    the ends as context, it aligned a change into them."""
    middle = difflib.SequenceMatcher(
        None,
        [key(line) for line in old[head : len(old) - tail]],
        [key(line) for line in new[head : len(new) - tail]],
    )
    return [
        (tag, i1 + head, i2 + head, j1 + head, j2 + head)
        for tag, i1, i2, j1, j2 in middle.get_opcodes()
    ]


def _common_ends(old: list[str], new: list[str]) -> tuple[int, int]:
    """How many lines `old` and `new` share at their start, then at their end."""
    most = min(len(old), len(new))
    head = 0
    while head < most and old[head] == new[head]:
        head += 1
    tail = 0
    while tail < most - head and old[-1 - tail] == new[-1 - tail]:
        tail += 1
    return head, tail


@contextlib.contextmanager
def os_errors(shown: str, action: str) -> Iterator[None]:
    """Turn an OS failure (permissions, a full disk) into an error the model sees."""
    try:
        yield
    except OSError as exc:
        reason = exc.strerror or str(exc)
        raise ToolError(f"cannot {action} {shown}: {reason}") from exc


def count_lines(text: str) -> int:
    if not text:
        return 0
    return text.count("\n") + (0 if text.endswith("\n") else 1)


def current_text(workspace: Path, path: str) -> str | None:
    """The text `path` holds now, for predicting a change that a person is shown: ""
    when it does not exist yet, None when it is outside the workspace, not a file, too
    large to edit or binary. Decoded as the edit tools decode it (`decode_text`: a
    cp1252 or latin-1 file as such, a stray byte as U+FFFD): read as strict UTF-8, such
    a file had no diff, and the person approved a write without seeing it."""
    from lathe.tools.paths import resolve_path

    try:
        target = resolve_path(workspace, path)
    except ToolError:
        return None
    if not target.exists():
        return ""
    try:
        if not target.is_file() or target.stat().st_size > MAX_TEXT_BYTES:
            return None
        content = decode_text(target.read_bytes())
    except OSError:
        return None
    return None if content is None else printable(content.text)


def unified_diff(shown: str, old: str, new: str, *, context: int = 3) -> str:
    before, after = old.splitlines(keepends=True), new.splitlines(keepends=True)
    lines = [f"--- a/{shown}\n", f"+++ b/{shown}\n"]
    changes = [
        c for c in _middle_opcodes(before, after, *_common_ends(before, after)) if c[0] != "equal"
    ]
    for hunk in _hunks(changes, context):
        (_, a_from, _, b_from, _), (_, _, a_to, _, b_to) = hunk[0], hunk[-1]
        a_from, b_from = max(0, a_from - context), b_from - min(context, a_from)
        a_to, b_to = min(len(before), a_to + context), b_to + min(context, len(before) - a_to)
        lines.append(f"@@ -{_span(a_from, a_to)} +{_span(b_from, b_to)} @@\n")
        shown_to = a_from
        for _, i1, i2, j1, j2 in hunk:
            lines += [" " + line for line in before[shown_to:i1]]
            lines += ["-" + line for line in before[i1:i2]]
            lines += ["+" + line for line in after[j1:j2]]
            shown_to = i2
        lines += [" " + line for line in before[shown_to:a_to]]
    if len(lines) == 2:
        return ""
    return "".join(
        line if line.endswith("\n") else line + "\n\\ No newline at end of file\n" for line in lines
    )


def _hunks(changes: list[Change], context: int) -> list[list[Change]]:
    """The changes in groups a unified diff shows as one hunk: those whose unchanged
    lines between are few enough to show as context of both."""
    hunks: list[list[Change]] = []
    for change in changes:
        if hunks and change[1] - hunks[-1][-1][2] <= 2 * context:
            hunks[-1].append(change)
        else:
            hunks.append([change])
    return hunks


def _span(start: int, stop: int) -> str:
    """A hunk's range as unified diffs write it: 1-based, the count left out when 1, and
    the line before when empty."""
    length = stop - start
    if length == 1:
        return str(start + 1)
    return f"{start + 1 if length else start},{length}"


SHOWN_LINE_CHARS = 2000  # as `read` cuts a line (`limits.read_max_line_chars`)


def cut_line(line: str, max_chars: int = SHOWN_LINE_CHARS) -> str:
    """`line` within `max_chars`, saying how long it was: one line of minified code or
    data can be megabytes."""
    if len(line) <= max_chars:
        return line
    return f"{line[:max_chars]} [... line cut: {len(line):,} characters in total]"


def cut_lines(text: str, max_chars: int = SHOWN_LINE_CHARS) -> str:
    """`text` with each line longer than `max_chars` cut (`cut_line`)."""
    if len(text) <= max_chars:
        return text
    ends = text.endswith("\n")
    cut = "\n".join(cut_line(line, max_chars) for line in text.split("\n")[: -1 if ends else None])
    return cut + "\n" if ends else cut


def clip_diff(diff: str, max_lines: int = 60) -> str:
    """A diff short enough for the model's context, saying how much was left out."""
    lines = diff.splitlines()
    if len(lines) <= max_lines:
        return cut_lines(diff)
    kept = "\n".join(cut_line(line) for line in lines[:max_lines])
    return f"{kept}\n[... diff cut: {plural(len(lines) - max_lines, 'more line')} ...]\n"


def refuse_read_only(path: Path, shown: str) -> None:
    """ToolError when `path` is marked read-only: a write replaces the file by a rename,
    which its permissions do not stop, so they are checked here. No write bit at all
    counts too, for root, whom the permissions themselves would not stop."""
    if os.statvfs(path).f_flag & os.ST_RDONLY:
        return  # the write itself fails, saying "Read-only file system"
    mode = path.stat().st_mode
    if not os.access(path, os.W_OK) or not mode & 0o222:
        raise ToolError(
            f"{shown} is read-only (mode {stat.S_IMODE(mode):o}); leave it as it is, or "
            "ask the user to make it writable if it must change"
        )


def load_text_file(path: Path, shown: str, *, verb: str) -> tuple[bytes, TextContent]:
    """Read a file that a tool will change; ToolError when it is not an editable text file.

    `verb` names the action for messages, e.g. "edit"."""
    if path.is_dir():
        raise ToolError(f"{shown} is a directory; {verb} works on files (use ls to list it)")
    from lathe.tools.paths import refuse_special

    refuse_special(path, shown)
    try:
        size = path.stat().st_size
    except FileNotFoundError:
        from lathe.tools.paths import not_found

        missing = not_found(path, shown)
        raise ToolError(f"{missing} Only for a genuinely new file, use write.") from None
    if size > MAX_TEXT_BYTES:
        raise ToolError(
            f"{shown} is too large to {verb} ({size:,} bytes, limit {MAX_TEXT_BYTES:,}); "
            f"change it with a command through bash instead"
        )
    data = path.read_bytes()
    content = decode_text(data)
    if content is None:
        raise ToolError(f"{shown} is a binary file; {verb} works only on text files")
    return data, content
