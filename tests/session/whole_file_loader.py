"""The session loader as it was before it streamed (commit 7716216): it read the whole
file, split it into lines and parsed them in passes. Kept as the specification of the
crash rules (torn last line, corrupt middle line, repeated ids, lost parents) that
`lathe.session.loader` must follow exactly; `test_loader_stream.py` holds the two equal
on damaged files. A change to a rule is made in both. What the streaming loader kept
as it was (the header check, the error wording, `Tail`, the paused collector, the
legacy-format pass) is
imported from it rather than copied.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from pathlib import Path

from pydantic import ValidationError

from lathe.errors import UsageError
from lathe.session.entries import ENTRY_ADAPTER, FORMAT_VERSION, Entry, Header
from lathe.session.loader import (
    Tail,
    _is_json,
    _parse_legacy,
    _read_header,
    _short,
    collector_paused,
)


@dataclass
class Loaded:
    header: Header
    entries: list[Entry]
    warnings: list[str] = field(default_factory=list)
    version: int = FORMAT_VERSION  # the version on disk, before migration
    tail: Tail = Tail.CLEAN
    tail_offset: int = 0  # where the bytes after the last newline start


def _parse_current(lines: list[tuple[int, bytes]], warnings: list[str]) -> list[tuple[int, Entry]]:
    parsed: list[tuple[int, Entry]] = []
    for lineno, line in lines:
        try:
            parsed.append((lineno, ENTRY_ADAPTER.validate_json(line)))
        except ValidationError as error:
            warnings.append(f"line {lineno}: corrupt entry skipped ({_short(error)})")
    return parsed


def _link(parsed: list[tuple[int, Entry]], warnings: list[str]) -> list[Entry]:
    """Drop duplicate ids, and re-attach an entry whose parent was lost to a corrupt line
    to the entry before it in the file: appends are sequential, so that is the nearest
    surviving ancestor."""
    entries: list[Entry] = []
    seen: set[str] = set()
    for lineno, entry in parsed:
        if not entry.id or entry.id in seen:
            warnings.append(f"line {lineno}: entry with a missing or repeated id skipped")
            continue
        if entry.parent is not None and entry.parent not in seen:
            previous = entries[-1].id if entries else None
            warnings.append(
                f"line {lineno}: parent {entry.parent} is missing; attached to "
                f"{previous or 'the root'} instead"
            )
            entry = replace(entry, parent=previous)
        seen.add(entry.id)
        entries.append(entry)
    return entries


def load_file(path: Path) -> Loaded:
    data = path.read_bytes()
    tail_offset = data.rfind(b"\n") + 1
    numbered = list(enumerate(data[:tail_offset].split(b"\n")[:-1], start=1))
    tail_bytes = data[tail_offset:]
    tail = Tail.CLEAN
    if tail_bytes.strip():
        if _is_json(tail_bytes):
            numbered.append((len(numbered) + 1, tail_bytes))
            tail = Tail.UNTERMINATED
        else:
            tail = Tail.TORN
    lines = [(number, line) for number, line in numbered if line.strip()]
    header_raw = _read_header(path, lines[0][1] if lines else b"")
    body = lines[1:]

    warnings: list[str] = []
    if tail is Tail.TORN:
        warnings.append(
            f"line {len(numbered) + 1}: torn last line skipped ({len(tail_bytes)} bytes "
            "of an interrupted write)"
        )
    version = header_raw["version"]
    with collector_paused():
        if version == FORMAT_VERSION:
            parsed = _parse_current(body, warnings)
        else:
            header_raw, parsed = _parse_legacy(header_raw, body, warnings)
    try:
        header = Header.model_validate(header_raw)
    except ValidationError as error:
        raise UsageError(f"{path} has an invalid header: {_short(error)}") from error
    entries = _link(parsed, warnings)
    return Loaded(header, entries, warnings, version, tail, tail_offset)
