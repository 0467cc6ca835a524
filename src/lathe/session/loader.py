"""Reading a session file: tolerant of damage, strict about versions.

A torn last line (a write cut short by kill -9 or power loss) and a corrupt line in the
middle are skipped and reported as warnings; neither is a reason to refuse the file.
What does refuse it: no readable header (nothing tells us the format), a format version
newer than this lathe knows (reading it would guess: `NewerSessionFormat`), or one no
lathe wrote (0, negative: a damaged header, which had been a ValueError traceback from
the migrations).

The file is read as a stream: each line is validated into its entry and linked into the
tree as it is read, so what stays in memory is the entries, never the file's bytes or
its lines beside them. Warnings keep one order whatever the damage: the torn tail
first, then unreadable lines, then repairs to the tree, each in file order.
"""

from __future__ import annotations

import dataclasses
import gc
import itertools
import json
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from enum import StrEnum
from pathlib import Path
from typing import IO, Any

from pydantic import ValidationError

from lathe.errors import UsageError
from lathe.session.entries import ENTRY_ADAPTER, FORMAT_VERSION, Entry, Header
from lathe.session.migrations import READ_AS_CURRENT, STEPS, RawLines, migrate
from lathe.session.tree import EntryTree


class Tail(StrEnum):
    CLEAN = "clean"  # the file ends with a newline
    TORN = "torn"  # bytes after the last newline that do not parse: an interrupted write
    UNTERMINATED = "unterminated"  # a whole entry after the last newline, newline missing


@dataclass
class Loaded:
    header: Header
    tree: EntryTree
    warnings: list[str] = field(default_factory=list)
    version: int = FORMAT_VERSION  # the version on disk, before migration
    tail: Tail = Tail.CLEAN
    tail_offset: int = 0  # where the bytes after the last newline start

    @property
    def entries(self) -> list[Entry]:
        return self.tree.entries


def _short(error: ValidationError | ValueError) -> str:
    if isinstance(error, ValidationError):
        first = error.errors()[0]
        where = ".".join(str(part) for part in first["loc"])
        return f"{first['msg']} at {where}" if where else first["msg"]
    return str(error)


class NewerSessionFormat(UsageError):
    """A session file in a format newer than this lathe reads: only an upgrade opens it.
    `path` and `version` say which file and format; the message says so, and what to do
    (`doing`: "open it" unless the caller was doing something else with it)."""

    def __init__(self, path: Path, version: int, *, doing: str = "open it") -> None:
        super().__init__(
            f"{path} uses session format version {version}, newer than this lathe "
            f"understands (up to {FORMAT_VERSION}); upgrade lathe to {doing}"
        )
        self.path = path
        self.version = version


def _read_header(path: Path, first: bytes) -> dict[str, Any]:
    try:
        raw = json.loads(first)
    except ValueError:
        raw = None
    if not isinstance(raw, dict) or "version" not in raw:
        raise UsageError(
            f"{path} has no readable header line, so its format is unknown; "
            "it is not a lathe session or it was cut short while being created"
        )
    version = raw["version"]
    # `type`, not isinstance: JSON's true is a Python int, and would read as version 1.
    if type(version) is int and version > FORMAT_VERSION:
        raise NewerSessionFormat(path, version)
    if type(version) is not int or (version != FORMAT_VERSION and version not in STEPS):
        raise UsageError(
            f"{path} has session format version {json.dumps(version)} in its header, "
            "which no lathe writes (they count from 1): the header is damaged; move the "
            "file aside"
        )
    return raw


def _validate_header(path: Path, raw: dict[str, Any]) -> Header:
    try:
        return Header.model_validate(raw)
    except ValidationError as error:
        raise UsageError(f"{path} has an invalid header: {_short(error)}") from error


@contextmanager
def collector_paused() -> Iterator[None]:
    """The cyclic garbage collector off for the block (and back as it was after).

    Parsing builds tens of thousands of acyclic objects; the collector would rescan all
    of them many times over and triple the load time of a long session. A caller that
    keeps what it loads can `gc.freeze()` inside the block so that not even the first
    collection after it walks them.
    """
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


def _is_json(line: bytes) -> bool:
    try:
        json.loads(line)
    except ValueError:
        return False
    return True


_BLOCK = 1 << 20


class _Lines:
    """The lines of a session file, read a block at a time, as (number of the block's
    first line, the block's lines without their newlines); blank lines included.

    The bytes after the last newline come last, as a block of their own, when they are
    whole JSON (a write that lost only its newline); otherwise they are a torn tail,
    which is never yielded. Once iterated, `tail`, `tail_offset`, `torn` (the torn
    tail's size) and `count` (newline-ended lines) describe how the file ends.
    """

    def __init__(self, handle: IO[bytes]) -> None:
        self._handle = handle
        self.tail = Tail.CLEAN
        self.tail_offset = 0
        self.torn = 0
        self.count = 0

    def __iter__(self) -> Iterator[tuple[int, list[bytes]]]:
        number = read = 0
        pending: list[bytes] = []  # the start of a line that continues in the next block
        while block := self._handle.read(_BLOCK):
            read += len(block)
            lines = block.split(b"\n")
            if len(lines) == 1:
                pending.append(block)
                continue
            pending.append(lines[0])
            lines[0] = b"".join(pending)
            pending = [lines.pop()]
            yield number + 1, lines
            number += len(lines)
        tail = b"".join(pending)
        self.count, self.tail_offset = number, read - len(tail)
        if tail.strip() and self._ends_whole(tail):
            yield number + 1, [tail]

    def _ends_whole(self, tail: bytes) -> bool:
        if _is_json(tail):
            self.tail = Tail.UNTERMINATED
            return True
        self.tail = Tail.TORN
        self.torn = len(tail)
        return False


_Blocks = Iterator[tuple[int, list[bytes]]]


def _numbered(blocks: _Blocks) -> Iterator[tuple[int, bytes]]:
    """The non-blank lines of `blocks`, one at a time, with their line numbers."""
    for number, lines in blocks:
        for lineno, line in enumerate(lines, number):
            if line.strip():
                yield lineno, line


def _split_header(blocks: _Blocks) -> tuple[bytes, _Blocks]:
    """The first non-blank line (b"" when there is none) and the blocks after it."""
    for number, lines in blocks:
        for index, line in enumerate(lines):
            if line.strip():
                rest = (number + index + 1, lines[index + 1 :])
                return line, itertools.chain([rest], blocks)
    return b"", blocks


# The adapter's own `validate_json` wraps this in one more Python call per line.
_validate_entry_json: Callable[[bytes], Entry] = ENTRY_ADAPTER.validator.validate_json


def _parse_current(blocks: _Blocks, warnings: list[str], linker: _Linker) -> None:
    # The hot loop of a load. A block whose every line parses and continues the chain
    # (a session that never branched, undamaged) goes into the tree in one step; any
    # other block, line by line. A blank line fails validation like a corrupt one, and
    # is told apart only then, so the lines that parse pay for no test of their own.
    for number, lines in blocks:
        try:
            entries = [_validate_entry_json(line) for line in lines]
        except ValidationError:
            pass
        else:
            if linker.tree.extend_chain(entries):
                continue
        for lineno, line in enumerate(lines, number):
            try:
                entry = _validate_entry_json(line)
            except ValidationError as error:
                if line.strip():
                    warnings.append(f"line {lineno}: corrupt entry skipped ({_short(error)})")
                continue
            linker.add(lineno, entry)


def _parse_legacy(
    header_raw: dict[str, Any], lines: Iterable[tuple[int, bytes]], warnings: list[str]
) -> tuple[dict[str, Any], list[tuple[int, Entry]]]:
    decoded: RawLines = []
    for lineno, line in lines:
        try:
            value = json.loads(line)
        except ValueError as error:
            warnings.append(f"line {lineno}: corrupt entry skipped ({error})")
            continue
        if isinstance(value, dict):
            decoded.append((lineno, value))
        else:
            warnings.append(f"line {lineno}: corrupt entry skipped (not a JSON object)")
    header_raw, migrated = migrate(header_raw, decoded)
    parsed: list[tuple[int, Entry]] = []
    for lineno, raw in migrated:
        try:
            parsed.append((lineno, ENTRY_ADAPTER.validate_python(raw)))
        except ValidationError as error:
            warnings.append(f"line {lineno}: entry skipped after migration ({_short(error)})")
    return header_raw, parsed


class _Linker:
    """Builds the tree as entries arrive in file order: a duplicate or missing id is
    dropped, and an entry whose parent was lost to a corrupt line is re-attached to the
    entry before it in the file (appends are sequential, so that is the nearest
    surviving ancestor)."""

    def __init__(self) -> None:
        self.tree = EntryTree()
        self.warnings: list[str] = []

    def add(self, lineno: int, entry: Entry) -> None:
        known = self.tree.by_id
        if not entry.id or entry.id in known:
            self.warnings.append(f"line {lineno}: entry with a missing or repeated id skipped")
            return
        if entry.parent is not None and entry.parent not in known:
            previous = self.tree.entries[-1].id if self.tree.entries else None
            self.warnings.append(
                f"line {lineno}: parent {entry.parent} is missing; attached to "
                f"{previous or 'the root'} instead"
            )
            entry = dataclasses.replace(entry, parent=previous)
        self.tree.add(entry)


def load_file(path: Path) -> Loaded:
    with path.open("rb") as handle:
        lines = _Lines(handle)
        first, blocks = _split_header(iter(lines))
        header_raw = _read_header(path, first)
        version = header_raw["version"]
        unreadable: list[str] = []
        linker = _Linker()
        with collector_paused():
            if version == FORMAT_VERSION or version in READ_AS_CURRENT:
                # An older version whose entries need no step is streamed alike: the
                # legacy path holds every line decoded at once.
                header = _validate_header(path, migrate(header_raw, [])[0])
                _parse_current(blocks, unreadable, linker)
            else:
                header_raw, parsed = _parse_legacy(header_raw, _numbered(blocks), unreadable)
                header = _validate_header(path, header_raw)
                for lineno, entry in parsed:
                    linker.add(lineno, entry)
    warnings = unreadable + linker.warnings
    if lines.tail is Tail.TORN:
        warnings.insert(
            0,
            f"line {lines.count + 1}: torn last line skipped ({lines.torn} bytes "
            "of an interrupted write)",
        )
    return Loaded(header, linker.tree, warnings, version, lines.tail, lines.tail_offset)
