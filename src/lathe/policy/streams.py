"""What flows between the stages of a pipeline, as far as the guard can know it.

`echo 'rm -rf /' | sh` runs a literal script; `curl ... | sh` runs a download; `find / |
xargs rm -rf` deletes what find lists under `/`. Each command's output is summarised as
a `Stream` so the next stage can be judged.
"""

from __future__ import annotations

import base64
import binascii
import itertools
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from lathe.policy.shell_words import Word, decode_ansi_c
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
        known = [v for v in values if v is not None]
        text = _printf(known[0], known[1:]) if known and len(known) == len(values) else None
        return UNKNOWN if text is None else Stream("text", text)
    if base == "dirname" and values and None not in values and not values[0].startswith("-"):
        return Stream("text", "".join(_dirname(v) + "\n" for v in values if v is not None))
    if base in ("cat", "tee"):
        files = [w for w in args if w.value is None or not w.value.startswith("-")]
        if base == "cat" and files:
            return Stream("file", items=tuple(files))
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


_CONVERSION = re.compile(r"%(?:%|s|[^a-zA-Z%]*[a-zA-Z])")


def _printf(fmt: str, args: list[str]) -> str | None:
    """What `printf FMT ARGS...` prints, for formats of `%s`, `%%` and escapes only
    (`printf '\\x72\\x6d'` prints `rm`); None for anything else."""
    if "\\c" in fmt:
        return None  # stops the output where it stands
    pieces = _CONVERSION.split(fmt)
    conversions = _CONVERSION.findall(fmt)
    if any(c not in ("%s", "%%") for c in conversions):
        return None
    literals = [decode_ansi_c(p) for p in pieces]
    if None in literals:
        return None
    out = []
    remaining = list(args)
    while True:
        for literal, conversion in itertools.zip_longest(literals, conversions):
            out.append(literal or "")
            if conversion == "%%":
                out.append("%")
            elif conversion == "%s":
                out.append(remaining.pop(0) if remaining else "")
        # bash reuses the format while arguments are left
        if not remaining or "%s" not in conversions:
            return "".join(out)


def _dirname(path: str) -> str:
    """What `dirname` prints for `path` (`x.sh` and `./x.sh` give `.`)."""
    stripped = path.rstrip("/")
    if not stripped:
        return "/" if path else "."
    head = stripped.rpartition("/")[0] if "/" in stripped else "."
    return head.rstrip("/") or ("/" if stripped.startswith("/") else head)


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
