"""What the agent remembers from one session to the next: two Markdown files of entries.

- the project's: `$LATHE_HOME/memory/projects/<slug>.md`, one per repository (the slug
  of the repository root, `config.loader.project_root`), so lathe writes nothing into
  the user's repository;
- the user's: `$LATHE_HOME/memory/user.md`, for every project.

`LATHE_MEMORY_DIR` names another folder for both (`memory/` of LATHE_HOME otherwise):
`lathe batch` gives each task's run one of its own, so no task reads or writes the
user's memory or another task's.

An entry is a Markdown bullet (`- text`, later lines indented by two spaces), so the
file reads well in an editor (`lathe memory edit`); text outside a bullet is kept as an
entry of its own. `MemoryStore` changes a file under its lock (`file_lock.FileLock` on
`<file>.lock`) and replaces it whole (a temporary file renamed over it), so two runs
writing at once both keep their entries and a reader never sees half a file. Each file
holds at most `max_bytes`: a write past that is refused with the entries listed, so the
model can consolidate. The caller masks secrets before a write (the `memory` tool runs
the redactor over the text, and refuses a text holding a credential: a key-shaped word,
a URL's password, a JWT, a private key... `config.secrets.find_credentials`, which
`lathe config show` masks the same with).

The files are read once, at the start of a session, into the system prompt
(`prompt_section`): a write during a run changes the file, not that run's prompt, so
the prompt's prefix stays the same from one request to the next.
"""

from __future__ import annotations

import os
import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from pydantic import Field

from lathe.errors import ToolError, UsageError
from lathe.file_lock import FileLock
from lathe.tools.base import Params, Tool, ToolContext, ToolOutput
from lathe.tools.files import printable

Scope = Literal["project", "user"]
SCOPES: tuple[Scope, ...] = ("project", "user")


class MemoryRefused(Exception):
    """A change the store refused; the message says why and what to do instead."""


MEMORY_DIR_VARIABLE = "LATHE_MEMORY_DIR"


def memory_path(scope: Scope, workspace: Path, home: Path | None = None) -> Path:
    """The memory file of `scope` for `workspace`: under `home`/memory when given, else
    under $LATHE_MEMORY_DIR (where `lathe batch` gives each task a folder of its own),
    else under LATHE_HOME/memory."""
    from lathe.config.loader import project_root
    from lathe.home import lathe_home, project_slug

    own = os.environ.get(MEMORY_DIR_VARIABLE)
    if home is None and own:
        base = Path(own).expanduser().absolute()  # as LATHE_HOME: children run elsewhere
    else:
        base = (home or lathe_home()) / "memory"
    if scope == "user":
        return base / "user.md"
    return base / "projects" / f"{project_slug(project_root(workspace))}.md"


_BULLET = re.compile(r"(?:[-*+]|\d+[.)])[ \t]+")


def parse_entries(text: str) -> list[str]:
    """Each bullet line (`- `, `* `, `+ `, `1. `) starts an entry, and the indented or
    blank lines after it continue it. Other text is an entry of its own, a paragraph
    (lines in a row) each: a user's hand-written note taken for the continuation of the
    bullet above it was removed with that entry."""
    entries: list[list[str]] = []
    paragraph = False  # the last entry is plain text, its last line not blank
    for line in text.splitlines():
        bullet = _BULLET.match(line)
        if bullet:
            entries.append([line[bullet.end() :]])
            paragraph = False
        elif entries and (not line.strip() or line[:1] in " \t" or paragraph):
            entries[-1].append(line.removeprefix("  "))
            paragraph = paragraph and bool(line.strip())
        elif line.strip():
            entries.append([line])
            paragraph = True
    return [text for lines in entries if (text := "\n".join(lines).strip())]


def render_entries(entries: Sequence[str]) -> str:
    lines = []
    for entry in entries:
        first, *rest = entry.strip().splitlines()
        lines += [f"- {first}", *(f"  {line}" if line.strip() else "" for line in rest)]
    return "".join(f"{line}\n" for line in lines)


@dataclass(frozen=True)
class MemoryFile:
    scope: Scope
    path: Path

    def entries(self) -> list[str]:
        """Its entries; a byte that is not UTF-8 is kept as a lone surrogate, so that a
        change to another entry writes it back as it was (`printable` for a prompt)."""
        try:
            data = self.path.read_bytes()
        except FileNotFoundError:
            return []
        except OSError as exc:
            raise UsageError(
                f"cannot read the memory file {self.path}: {exc.strerror}; fix or remove it"
            ) from None
        return parse_entries(data.decode("utf-8", "surrogateescape"))

    def size(self) -> int:
        try:
            return self.path.stat().st_size
        except FileNotFoundError:
            return 0


class MemoryStore:
    """The two memory files of a workspace, changed only through `add`, `replace`,
    `remove` and `clear` (each under the file's lock). A change that would make a file
    larger than `max_bytes` raises `MemoryRefused`; one that shrinks it never does."""

    def __init__(self, workspace: Path, max_bytes: int, home: Path | None = None) -> None:
        self.max_bytes = max_bytes
        self.files = {s: MemoryFile(s, memory_path(s, workspace, home)) for s in SCOPES}

    def add(self, scope: Scope, text: str) -> str:
        def change(entries: list[str]) -> str:
            if text.strip() in entries:
                return f"the {scope} memory already holds that entry"
            entries.append(text.strip())
            return f"added to the {scope} memory"

        return self._change(scope, change)

    def replace(self, scope: Scope, old_text: str, text: str) -> str:
        def change(entries: list[str]) -> str:
            entries[_one_match(entries, old_text, scope)] = text.strip()
            return f"replaced the {scope} memory entry"

        return self._change(scope, change)

    def remove(self, scope: Scope, old_text: str) -> str:
        def change(entries: list[str]) -> str:
            del entries[_one_match(entries, old_text, scope)]
            return f"removed the {scope} memory entry"

        return self._change(scope, change)

    def clear(self, scope: Scope) -> None:
        self._change(scope, lambda entries: entries.clear() or "")

    def _change(self, scope: Scope, change) -> str:
        file = self.files[scope]
        file.path.parent.mkdir(parents=True, exist_ok=True)
        with FileLock(file.path.with_name(file.path.name + ".lock")):
            entries = file.entries()
            said = change(entries)
            text = render_entries(entries)
            size = len(text.encode("utf-8", "surrogateescape"))
            # A file the user made too long in an editor may still shrink.
            if size > self.max_bytes and size > file.size():
                listed = "\n".join(f"{n}. {e}" for n, e in enumerate(entries, 1))
                raise MemoryRefused(
                    f"the {scope} memory would hold {size:,} bytes, over its limit of "
                    f"{self.max_bytes:,}: nothing was written. Make room first: replace "
                    "entries that say related things with one shorter entry, or remove "
                    "what is no longer true, then try again. With this change its entries "
                    f"would be:\n{listed}"
                )
            from lathe.atomic_write import write_atomic

            write_atomic(file.path, text.encode("utf-8", "surrogateescape"), through_links=True)
        return said


def _one_match(entries: Sequence[str], old_text: str, scope: Scope) -> int:
    needle = old_text.strip()
    if not needle:
        raise MemoryRefused("old_text is empty: give a part of the entry to change")
    found = [n for n, entry in enumerate(entries) if needle in entry]
    if not found:
        raise MemoryRefused(f"no {scope} memory entry contains {needle!r}")
    if len(found) > 1:
        which = "\n".join(f"- {entries[n]}" for n in found)
        raise MemoryRefused(
            f"{needle!r} is in {len(found)} {scope} memory entries; give a longer part "
            f"of the one you mean. They are:\n{which}"
        )
    return found[0]


def _within(entries: Sequence[str], max_bytes: int) -> list[str]:
    """The first entries that fit `max_bytes` (a file written under a larger limit, or
    by hand, does not get to fill the prompt)."""
    kept, size = [], 0
    for entry in entries:
        size += len(render_entries([entry]).encode("utf-8", "surrogateescape"))
        if size > max_bytes:
            break
        kept.append(entry)
    return kept


def prompt_section(store: MemoryStore) -> str | None:
    """The memory as it is now, for the system prompt; None when both files are empty."""
    parts = []
    for scope in SCOPES:
        entries = store.files[scope].entries()
        shown = _within(entries, store.max_bytes)
        if shown:
            left = len(entries) - len(shown)
            cut = f"\n[{left} more entries left out: over memory_max_bytes]" if left else ""
            text = printable(render_entries(shown).rstrip())
            parts.append(f"{scope.capitalize()} memory:\n{text}{cut}")
    if not parts:
        return None
    return (
        "What you noted in earlier sessions (the memory tool changes it; it is read "
        "here once, at the start of the session):\n\n" + "\n\n".join(parts)
    )


class MemoryParams(Params):
    action: Literal["add", "replace", "remove"] = Field(
        description="add a new entry; replace or remove the one entry containing old_text."
    )
    scope: Scope = Field(
        description="project: about this repository (how to run its tests, its "
        "conventions, traps); user: about the user, true in every project."
    )
    text: str = Field(
        default="",
        description="The entry to add, or what replaces the old one: one fact, short and "
        "specific. Empty for remove.",
    )
    old_text: str = Field(
        default="",
        description="For replace and remove: a part of the entry to change, found in "
        "exactly one entry.",
    )


class MemoryTool(Tool):
    """Writes the memory files (`MemoryStore`), each text masked by `mask` first so no
    secret is ever stored. Read-only for the gate when it writes the project memory: it
    changes no file of the workspace, only lathe's own data (deny it with `--deny
    memory`). A user-memory write is judged as a change: that memory is in every
    project's prompt, so text a repository planted (the model following its README)
    would follow the user everywhere; `ask` asks and `read-only` refuses it."""

    name = "memory"
    description = (
        "Record what you learned that will matter in a later session: how to build and "
        "test this project, a convention the user asked for, a trap you fell into. The "
        "memory is shown to you at the start of every session; keep it short and true."
    )
    parameters = MemoryParams
    read_only = True

    def __init__(self, store: MemoryStore, mask) -> None:
        self._store = store
        self._mask = mask

    def read_only_call(self, arguments: dict[str, Any]) -> bool:
        return arguments.get("scope") != "user"

    def summarize_call(self, args: MemoryParams) -> str:
        what = (args.text or args.old_text).strip().splitlines()
        first = what[0] if what else ""
        return f"{args.action} {args.scope}: {first if len(first) <= 60 else first[:57] + '...'}"

    async def execute(self, args: MemoryParams, ctx: ToolContext) -> ToolOutput:
        import asyncio

        text = self._mask(args.text)
        if args.action != "remove" and not text.strip():
            raise ToolError(f"{args.action} needs text: the entry to write")
        if found := credentials_in(text):
            raise ToolError(
                f"the text holds what looks like a credential ({', '.join(found)}), and "
                "memory never holds a secret: store where it is kept (the variable's name, "
                "the file's path, the secret manager's entry), not the value, then try again"
            )
        if args.action != "add" and not args.old_text.strip():
            raise ToolError(f"{args.action} needs old_text: a part of the entry to change")
        try:
            if args.action == "add":
                said = await asyncio.to_thread(self._store.add, args.scope, text)
            elif args.action == "replace":
                said = await asyncio.to_thread(
                    self._store.replace, args.scope, self._mask(args.old_text), text
                )
            else:
                said = await asyncio.to_thread(
                    self._store.remove, args.scope, self._mask(args.old_text)
                )
        except MemoryRefused as exc:
            raise ToolError(str(exc)) from None
        masked = (
            " (a secret in the text was masked: memory never holds one)"
            if text != args.text
            else ""
        )
        return ToolOutput(content=f"Done: {said}{masked}.", summary=said)


def credentials_in(text: str) -> list[str]:
    """What in `text` is shaped like a credential, each named without its secret part
    (`'ghp_…'`, `'postgres://admin:…@db/app'`, `a PEM private key`); see
    `config.secrets.find_credentials`. Only exact values of the run's secrets are masked
    (the redactor); a key pasted into the conversation is not one of them."""
    from lathe.config.secrets import find_credentials

    return list(dict.fromkeys(named for _, _, named in find_credentials(text)))


def memory_tools(workspace: Path, settings, secrets: Sequence[str], session) -> list[Tool]:
    """The `memory` and `recall` tools of a run (none when `settings.tools` is off):
    `settings` is the config's `[memory]` section, `secrets` the values a write must
    never store (the model's key and secret headers; the environment's secret-looking
    variables are added), `session` the run's (recall leaves it out; may be None)."""
    if not settings.tools:
        return []
    from lathe.home import lathe_home
    from lathe.obs import Redactor
    from lathe.recall import RecallTool
    from lathe.session.listing import sessions_root

    redactor = Redactor.for_run(secrets, os.environ)
    store = MemoryStore(workspace, settings.memory_max_bytes)
    return [
        MemoryTool(store, redactor.mask),
        RecallTool(sessions_root(lathe_home()), workspace, session.id if session else None),
    ]
