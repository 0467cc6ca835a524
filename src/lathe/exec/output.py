"""Command output as the model is shown it: kept whole while it fits, else a head and a
tail around a marker, with everything in a spill file (`_OutputSink`, `cap_output`), and
the spill folder kept bounded (`_prune_spills`). `LocalExecutor` feeds a sink as output
comes; tools holding output already cap it with `cap_output`."""

from __future__ import annotations

import contextlib
import fcntl
import os
import re
import secrets
import time
from pathlib import Path
from typing import BinaryIO

from lathe.exec.terminal import terminal_text

# The end of a command's output (test summaries, the error that stopped a build) usually
# matters more than its start, so the tail gets the larger share.
_HEAD_SHARE = 0.4
# A spill file keeps no more: the output's end is in the result, and an endless command
# must not fill the disk the workspace is on.
SPILL_MAX_BYTES = 64 * 1024 * 1024
_SPILL_FULL = "\n[... the spill file stops at 64 MiB; the output's end is in the result ...]\n"
# A spill folder keeps no more of lathe's spill files than this (when a spill closes,
# the oldest beyond go: `_prune_spills`): three `yes` under a 2 s timeout left 193 MB
# in the workspace, and nothing ever removed one.
SPILL_FOLDER_MAX_FILES = 64
SPILL_FOLDER_MAX_BYTES = 2 * SPILL_MAX_BYTES
_SPILL_NAME = re.compile(r"\d{8}-\d{6}-[0-9a-f]{8}\.log")
# lathe's spill folder in a workspace: the only one made with a `.gitignore`.
_WORKSPACE_SPILLS = (".lathe", "tmp")


def cap_output(data: bytes, limit: int, spill_dir: Path | None) -> tuple[str, Path | None]:
    """Output a tool already holds, capped as command output is: all of it when it fits
    in `limit` bytes as shown, else head and tail around a marker, the whole in a spill
    file (its path returned; None when nothing was cut or it could not be written)."""
    sink = _OutputSink(limit, spill_dir)
    sink.feed(data)
    sink.close()
    return sink.text(), sink.spill_path


class _OutputSink:
    """Keeps all output while it fits in `limit`; past that, a head and a tail in memory
    and everything in a spill file.

    `limit` bounds the text the model is shown (`text`): cleaned as a terminal shows it,
    the marker included. Cleaning mostly shrinks an output, but a run of control bytes
    becomes one U+FFFD (3 bytes) and so does each invalid byte: an output cut to fit its
    raw bytes grew past the cap once cleaned, and the tool output cap cut it again (two
    notices naming two spill files, the real marker swallowed). The numbers the marker
    gives count the spill file's bytes, which are the output as it came."""

    def __init__(self, limit: int, spill_dir: Path | None) -> None:
        self._limit = max(limit, 0)
        self._head_limit = int(self._limit * _HEAD_SHARE)
        self._tail_limit = self._limit - self._head_limit
        self._spill_dir = spill_dir
        self._buffer = bytearray()  # everything until the limit is passed, then the head
        self._tail = bytearray()
        self._spill: BinaryIO | None = None
        self._spill_error: str | None = None
        self._spilled = 0  # bytes in the spill file
        self._spill_full = False  # it reached SPILL_MAX_BYTES
        self._closed = False
        self._whole: str | None = None  # the cleaned output, when it fits uncut
        self.spill_path: Path | None = None
        self.total = 0
        self.truncated = False

    def feed(self, data: bytes) -> None:
        self.total += len(data)
        if not self.truncated:
            self._buffer += data
            if len(self._buffer) > self._limit:
                self._start_spill()
            return
        self._write_spill(data)
        self._tail += data
        if len(self._tail) > self._tail_limit:
            del self._tail[: len(self._tail) - self._tail_limit]

    def _start_spill(self) -> None:
        self.truncated = True
        everything = bytes(self._buffer)
        # Cut at `close`, the output may fit `limit` raw: then head and tail only meet.
        tail_start = max(len(everything) - self._tail_limit, self._head_limit)
        self._tail = bytearray(everything[tail_start:])
        self._buffer = bytearray(everything[: self._head_limit])
        if self._spill_dir is None:  # nobody would read it: the middle is dropped
            return
        try:
            make_spill_folder(self._spill_dir)
            path = self._spill_dir / f"{time.strftime('%Y%m%d-%H%M%S')}-{secrets.token_hex(4)}.log"
            self._spill = path.open("xb")
            self.spill_path = path
        except OSError as exc:
            self._spill_error = str(exc)
            return
        # Held while it is written: a spill starting meanwhile (another call's, another
        # lathe's on this workspace) must not remove it (`_prune_spills`).
        with contextlib.suppress(OSError):
            fcntl.flock(self._spill.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
        self._write_spill(everything)

    def _write_spill(self, data: bytes) -> None:
        if self._spill is None:
            return
        room = SPILL_MAX_BYTES - self._spilled
        full = len(data) >= room
        try:
            self._spill.write(data[:room] if full else data)
            self._spilled += min(len(data), room)
            if full:  # `yes` under a 2 s timeout wrote 1.4 GB into the workspace
                self._spill.write(_SPILL_FULL.encode())
        except OSError as exc:  # a full disk must not lose the run, only the spill
            self._spill_error = str(exc)
            full = True
        if full:
            self._close_spill()
            self._spill_full = self._spill_error is None

    def _close_spill(self) -> None:
        """Close the spill file, then make room for it in its folder: by its real size,
        now known. Counted at the 64 MiB it may reach when it started, a newest file
        near that size took every other one, named by results a few messages back."""
        assert self._spill is not None and self.spill_path is not None
        self._spill.close()
        self._spill = None
        _prune_spills(self.spill_path)

    def close(self) -> None:
        """No more output comes. An output that fits `limit` raw but not once cleaned is
        cut now, as a longer one was."""
        if not self._closed:
            self._closed = True
            if not self.truncated:
                whole = terminal_text(self._buffer.decode("utf-8", "replace"))
                if len(whole.encode()) <= self._limit:
                    self._whole = whole
                else:
                    self._start_spill()
        if self._spill is not None:
            self._close_spill()

    def text(self) -> str:
        """The output as a terminal would have shown it (`terminal.terminal_text`), in at
        most `limit` bytes; the spill file keeps the bytes as they came."""
        self.close()
        if self._whole is not None:
            return self._whole
        head, tail = _cut_at_lines(bytes(self._buffer), bytes(self._tail))
        head, tail = _whole_head(head), _whole_tail(tail)
        # The marker's numbers only get smaller as head and tail do: room for it now.
        room = max(self._limit - len(self._marker(len(head), self.total).encode()), 0)
        head_text, tail_text = _shown(head), _shown(tail)
        if _size(head_text) + _size(tail_text) > room:
            head_room = max(int(room * _HEAD_SHARE), room - _size(tail_text))
            if _size(head_text) > head_room:
                head = _head_within(head, head_room)
                head_text = _shown(head)
            if _size(head_text) + _size(tail_text) > room:
                tail = _tail_within(tail, room - _size(head_text))
                tail_text = _shown(tail)
        marker = self._marker(len(head), self.total - len(head) - len(tail))
        return head_text + marker + tail_text

    def _marker(self, head: int, omitted: int) -> str:
        """Between head and tail: how many bytes are not shown and, with a spill file,
        the byte of it they start at (what `tail -c +BYTE` pages from)."""
        where = (
            f"; the spill file could not be written: {self._spill_error}"
            if self._spill_error
            else "; the spill file stops at 64 MiB"
            if self._spill_full
            else ""
        )
        start = f"from byte {head + 1:,}: " if self.spill_path is not None else ""
        return f"\n[... {start}{omitted:,} bytes omitted{where} ...]\n"


def make_spill_folder(folder: Path) -> None:
    """Make `folder`, a spill folder or one in it (`set-aside`), when missing. Under a
    workspace's `.lathe/tmp` (`ui.wiring.spill_dir`), that folder gets its `.gitignore`
    of `*` first, so that nothing spilled reaches the user's commits; OSError when the
    file is a link (it is not followed) or anything cannot be made."""
    parts = folder.parts
    ends = [i + 2 for i in range(len(parts) - 1) if parts[i : i + 2] == _WORKSPACE_SPILLS]
    if ends:
        ours = Path(*parts[: ends[-1]])
        ours.mkdir(parents=True, exist_ok=True)
        _ignore_everything(ours / ".gitignore")
    folder.mkdir(parents=True, exist_ok=True)


def _ignore_everything(ignore: Path) -> None:
    """Write `*` to the spill folder's .gitignore unless a file is there already."""
    try:
        fd = os.open(ignore, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o644)
    except FileExistsError:
        if ignore.is_symlink():
            raise OSError(f"{ignore} is a link; lathe does not write through it") from None
        return
    with os.fdopen(fd, "w") as file:
        file.write("*\n")


def _shown(data: bytes) -> str:
    return terminal_text(data.decode("utf-8", "replace"))


def _size(text: str) -> int:
    return len(text.encode())


def _cut_at_lines(head: bytes, tail: bytes) -> tuple[bytes, bytes]:
    """Prefer whole lines at the cut when a line break is near it."""
    newline = head.rfind(b"\n")
    if newline >= len(head) // 2:
        head = head[: newline + 1]
    newline = tail.find(b"\n")
    if 0 <= newline < len(tail) // 2:
        tail = tail[newline + 1 :]
    return head, tail


def _head_within(head: bytes, room: int) -> bytes:
    """The longest start of `head` (found by halving) that fits `room` bytes as shown,
    at a line break when one is near its end. Cleaning works line by line, so a shorter
    start of whole lines shows no more than a longer one."""
    fits, too_long = 0, len(head)
    while too_long - fits > 1:
        middle = (fits + too_long) // 2
        if _size(_shown(_whole_head(head[:middle]))) <= room:
            fits = middle
        else:
            too_long = middle
    return _cut_at_lines(_whole_head(head[:fits]), b"")[0]


def _tail_within(tail: bytes, room: int) -> bytes:
    """The longest end of `tail` that fits `room` bytes as shown, from a line's start
    when one is near."""
    too_long, fits = 0, len(tail)
    while fits - too_long > 1:
        middle = (too_long + fits) // 2
        if _size(_shown(_whole_tail(tail[middle:]))) <= room:
            fits = middle
        else:
            too_long = middle
    return _whole_tail(_cut_at_lines(b"", tail[fits:])[1])


# An escape sequence the cut left without its end: shown, it would be a U+FFFD and its
# first characters.
_OPEN_ESCAPE = re.compile(rb"\x1b(?:\[[0-?]*[ -/]*)?\Z")


def _whole_head(data: bytes) -> bytes:
    """`data` without a character or an escape sequence the cut left unfinished."""
    for back in range(1, min(4, len(data)) + 1):
        byte = data[-back]
        if byte < 0x80:
            break
        if byte >= 0xC0:  # the lead byte of the last character
            if (2 if byte < 0xE0 else 3 if byte < 0xF0 else 4) > back:
                data = data[:-back]
            break
    opened = _OPEN_ESCAPE.search(data)
    return data[: opened.start()] if opened else data


def _whole_tail(data: bytes) -> bytes:
    """`data` from its first whole character."""
    start = 0
    while start < min(len(data), 3) and 0x80 <= data[start] <= 0xBF:
        start += 1
    return data[start:]


def _prune_spills(spill: Path) -> None:
    """Make room for the spill file `spill`, just closed: remove lathe's oldest spill
    files in its folder beyond SPILL_FOLDER_MAX_FILES or SPILL_FOLDER_MAX_BYTES, counted
    at their real sizes. Kept whatever their size: `spill` and the newest other one (the
    result before names it, and the model may be paging it) and any still being written
    (its writer holds a lock: a call running alongside, another lathe on this
    workspace). Nothing else in the folder (set-aside folders, an MCP server's files)
    is touched."""
    try:
        files, size = 1, spill.stat().st_size
        spills = [
            (entry.stat(follow_symlinks=False), entry.path)
            for entry in os.scandir(spill.parent)
            if _SPILL_NAME.fullmatch(entry.name) and entry.is_file(follow_symlinks=False)
            and entry.name != spill.name
        ]  # fmt: skip
    except OSError:
        return
    spills.sort(key=lambda other: other[0].st_mtime_ns, reverse=True)
    for index, (stat, path) in enumerate(spills):
        keep = files < SPILL_FOLDER_MAX_FILES and size + stat.st_size <= SPILL_FOLDER_MAX_BYTES
        if index == 0 or keep or not _removed_unless_written(path):
            files, size = files + 1, size + stat.st_size


def _removed_unless_written(path: str) -> bool:
    """Remove the spill file `path` unless its writer still holds it; whether it went."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
    except OSError:
        return False
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        os.unlink(path)
    except OSError:  # BlockingIOError: being written
        return False
    finally:
        os.close(fd)
    return True
