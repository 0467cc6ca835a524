"""What flows between the stages of a pipeline, as far as the guard can know it.

`echo 'rm -rf /' | sh` runs a literal script; `curl ... | sh` runs a download; `find / |
xargs rm -rf` deletes what find lists under `/`. Each command's output is summarised as
a `Stream` so the next stage can be judged.
"""

from __future__ import annotations

import base64
import binascii
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from lathe.policy.shell_words import Word
from lathe.policy.wrappers import find_call

DOWNLOADERS = frozenset(
    {"curl", "wget", "fetch", "aria2c", "http", "https", "nc", "ncat", "netcat", "socat"}
)
_DECODERS = frozenset(
    {"base64", "base32", "basenc", "xxd", "openssl", "uudecode", "gzip", "gunzip", "zcat",
     "bzcat", "bunzip2", "xzcat", "unxz", "zstdcat", "rev", "tr"}
)  # fmt: skip


@dataclass(frozen=True)
class Stream:
    """What flows into a command's stdin, as far as it is known."""

    kind: Literal["text", "paths", "file", "download", "decoded", "unknown"]
    text: str = ""
    items: tuple[Word, ...] = ()
    origin: str = ""


UNKNOWN = Stream("unknown")


def output_of(base: str, args: list[Word], stdin: Stream | None, cwd: Path | None) -> Stream:
    """What a command writes to stdout, as far as the guard needs to know."""
    values = [w.value for w in args]
    if base == "echo":
        flags = set()
        while values and values[0] in ("-n", "-e", "-E", "-ne", "-en"):
            flags.add(values.pop(0))
        if None in values or (any("e" in f for f in flags) and "\\" in "".join(map(str, values))):
            return UNKNOWN
        return Stream("text", " ".join(v for v in values if v is not None) + "\n")
    if base == "printf":
        if not values or None in values:
            return UNKNOWN
        fmt = values[0] or ""
        if fmt in ("%s", "%s\\n", "%s\n"):
            return Stream("text", "\n".join(v for v in values[1:] if v is not None) + "\n")
        return UNKNOWN if "%" in fmt or "\\" in fmt else Stream("text", fmt)
    if base in ("cat", "tee"):
        files = [v for v in values if v is None or not v.startswith("-")]
        if base == "cat" and files:
            return Stream("file") if None not in files else UNKNOWN
        return stdin or UNKNOWN
    if base in DOWNLOADERS:
        return Stream("download", origin=base)
    if base in ("base64", "base32") and any(v in ("-d", "--decode", "-D") for v in values):
        return _decode(base, stdin)
    if base in _DECODERS:
        return Stream("decoded", origin=base)
    if base == "find":
        return Stream("paths", items=tuple(under(w) for w in find_call(args).roots))
    if base == "ls":
        dirs = [w for w in args if not (w.value or "x").startswith("-")]
        return Stream("paths", items=tuple(under(w) for w in dirs or [Word(".", ".")]))
    if stdin is not None and stdin.kind in ("download", "decoded"):
        return stdin  # a filter does not make a download trustworthy
    return UNKNOWN


def under(word: Word) -> Word:
    if word.value is None:
        return word
    return Word(word.text, word.value.rstrip("/") + "/*", glob=True)


def _decode(base: str, stdin: Stream | None) -> Stream:
    if stdin is None or stdin.kind != "text":
        return Stream("decoded", origin=base)
    try:
        raw = (base64.b64decode if base == "base64" else base64.b32decode)(
            "".join(stdin.text.split()), validate=True
        )
        return Stream("text", raw.decode("utf-8"))
    except (binascii.Error, ValueError, UnicodeDecodeError):
        return Stream("decoded", origin=base)
