"""Script files a command runs (`bash x.sh`, `source x.sh`, `. ./x.sh`, `./x.sh`,
`bash < x.sh`, `cat x.sh | sh`), and what they hold when the guard decides.

A script written earlier in the same command line by `echo`/`printf`/a heredoc (through
`>`, `>>` or `tee`) holds that text; otherwise the file on disk is read, up to
`MAX_BYTES`. One an earlier command copied, moved or linked there (`cp clean.sh c2; bash
c2`) may also hold its source's content, and one it rewrote in place (`sed -i`, `perl
-pi`, `patch`, `git checkout --`) text only run time knows (`runners.script`).

A script on disk can only add a deny to the verdict (never an ask: before
the guard read scripts, running one was allowed, and in `ask`/`auto` mode the sandbox
contains it). At most `MAX_FILES` script readings happen per command, so scripts that
source each other cannot make the analysis explode.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path, PurePosixPath

MAX_BYTES = 64 * 1024
MAX_FILES = 32
_SHELLS = frozenset({"sh", "bash", "dash", "zsh", "ksh", "ash", "mksh"})


@dataclass(frozen=True)
class Content:
    text: str | None  # None: written at run time by something the guard does not follow
    on_disk: bool  # read from the file system (not written by this command line)


class Files:
    """The files this command line writes, as far as their text is known."""

    def __init__(self) -> None:
        self.written: dict[Path, str | None] = {}
        self.readings = 0
        self.version = 0  # counts the changes to `written`

    def write(self, path: Path, text: str | None, *, append: bool) -> None:
        if append and text is not None:
            before = self.content(path, count=False)
            text = None if before is None or before.text is None else before.text + text
        if path not in self.written or self.written[path] != text:
            self.version += 1
        self.written[path] = text

    def content(self, path: Path, *, count: bool = True) -> Content | None:
        """What `path` holds; None when it does not exist, is too big, or is unreadable,
        or when the command has already read `MAX_FILES` scripts."""
        if path in self.written:
            return Content(self.written[path], on_disk=False)
        if count:
            if self.readings >= MAX_FILES:
                return None
            self.readings += 1
        try:
            if not path.is_file() or path.stat().st_size > MAX_BYTES:
                return None
            with path.open("rb") as handle:
                head = handle.read(1024)
                if b"\0" in head:
                    return None  # a compiled program
                raw = head + handle.read(MAX_BYTES)
        except OSError:
            return None
        return Content(raw.decode("utf-8", "replace"), on_disk=True)


def runs_as_shell_script(text: str) -> bool:
    """Would executing this file (`./x.sh`) run it with a POSIX-style shell?"""
    first = text.split("\n", 1)[0]
    if not first.startswith("#!"):
        return True  # bash runs a text file without `#!` itself
    words = first[2:].split()
    program = PurePosixPath(words[0]).name if words else "sh"
    if program == "env":
        rest = [w for w in words[1:] if not w.startswith("-") and "=" not in w]
        program = rest[0] if rest else ""
    return program in _SHELLS
