"""Skills: folders holding a `SKILL.md`, whose name and description the model sees up
front and whose body it reads only when it uses the skill (the `skill` tool).

Where skills are found, in this order (the first skill of a name wins, a later one of
the same name is skipped with a notice): `<workspace>/.lathe/skills/NAME/SKILL.md`, the
user's `skills/` folder beside the user config file (`lathe config path`), and
`<workspace>/.claude/skills/NAME/SKILL.md` (Claude Code's layout, read as it is).
SKILL.md starts with front matter giving `name` and `description` (see
`lathe.front_matter`: one-line values, not full YAML); it is read as instruction files
are (`tools.files.decode_text`: UTF-16 with its BOM, cp1252...). A folder without one, or
a SKILL.md whose front matter is missing, unreadable or lacks either key, is skipped with
a one-line problem naming it.

A skill is text for the model and runs nothing, so a project's skills need no trust. But
a project SKILL.md, or its folder, that is a link leading outside the workspace could
hand the model any file of the machine, and the model can make such a link in the middle
of a run: every read of a skill's file (`ReadScope.text`), when it is found and when it
is used, resolves the path once, checks that it still lies inside the skill's root and
that no read rule covers it, and opens what it checked without following a link.
"""

from __future__ import annotations

import errno
import os
import re
import stat
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path

SKILL_FILE = "SKILL.md"
_MAX_SKILL_BYTES = 256 * 1024
_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.:-]{0,63}")
# Folders are opened as handles to walk by: O_PATH needs no read permission on them.
_FOLDER = os.O_DIRECTORY | os.O_NOFOLLOW | getattr(os, "O_PATH", os.O_RDONLY)


class SkillUnreadable(ValueError):
    """A skill's file may not, or cannot, be read now. The message is the reason, in
    words that follow the file's name ("it leads to /x, outside the workspace");
    `missing` when there is no such file."""

    def __init__(self, reason: str, *, missing: bool = False) -> None:
        super().__init__(reason)
        self.missing = missing


@dataclass(frozen=True)
class ReadScope:
    """Where a skill's files may be read from, checked at every read: inside `root`, a
    real folder (the workspace for a project's skills, see `_root`), and not a file of
    the workspace a read rule in `deny_read` covers."""

    root: Path
    workspace: Path
    deny_read: tuple[str, ...] = ()

    def text(self, named: Path, real: Path | None = None, *, limit: int | None = None) -> str:
        """The text of the file `named` (whose real path, when the caller resolved it,
        is `real`), at most `limit` bytes of it; SkillUnreadable saying why not."""
        real = _real(named) if real is None else real
        if not real.is_relative_to(self.root):
            where = "the workspace" if self.root == _real(self.workspace) else self.root
            raise SkillUnreadable(f"it leads to {real}, outside {where}")
        if read_denied(named, self.workspace, self.deny_read) or read_denied(
            real, self.workspace, self.deny_read
        ):
            raise SkillUnreadable("a read rule denies it")
        try:
            data = _read_unlinked(real, limit)
        except SkillUnreadable as exc:
            if exc.missing and os.path.islink(named):
                raise SkillUnreadable(f"it is a link to {real}, which is not there") from None
            raise
        from lathe.tools.files import decode_text, printable

        decoded = decode_text(data)
        if decoded is None:
            raise SkillUnreadable("it is not text (a binary file?)")
        return printable(decoded.text)


@dataclass(frozen=True)
class Skill:
    name: str
    description: str
    path: Path  # the SKILL.md
    origin: str  # "project", "user" or "claude"
    scope: ReadScope  # where what it serves may be read from

    @property
    def folder(self) -> Path:
        return self.path.parent

    def body(self) -> str:
        """The text after the front matter, read now (the skill may have changed, and
        its SKILL.md may now lead elsewhere: SkillUnreadable then)."""
        from lathe.front_matter import split_front_matter

        text = self.scope.text(self.path, limit=_MAX_SKILL_BYTES)
        _, body = split_front_matter(text, ("name", "description"))
        return body.strip()

    def file(self, name: str) -> str:
        """The text of a file of the skill's folder, `name` relative to it: never one
        outside that folder (links resolved) or the skill's scope; SkillUnreadable."""
        real = _real(self.folder / name)
        folder = _real(self.folder)
        if not real.is_relative_to(folder):
            raise SkillUnreadable(f"it is outside the skill's folder {self.folder}")
        return self.scope.text(self.folder / name, real)


@dataclass
class SkillCatalog:
    """The skills found for a workspace, in the order they are listed, and what was
    skipped (one line each, naming the file)."""

    skills: list[Skill] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)

    def get(self, name: str) -> Skill | None:
        return next((s for s in self.skills if s.name == name), None)

    def names(self) -> list[str]:
        return [s.name for s in self.skills]


def user_skills_dir() -> Path:
    """`skills/` beside the user config file (which LATHE_CONFIG may move)."""
    from lathe.config.loader import user_config_path

    return user_config_path().parent / "skills"


def skill_roots(workspace: Path) -> list[tuple[str, Path]]:
    """The folders searched, with their origin, in order of precedence."""
    return [
        ("project", workspace / ".lathe" / "skills"),
        ("user", user_skills_dir()),
        ("claude", workspace / ".claude" / "skills"),
    ]


def discover_skills(workspace: Path, deny_read: Sequence[str] = ()) -> SkillCatalog:
    """The workspace's skills; one whose SKILL.md a read rule (`deny_read`) covers, by
    its name or by where a link leads, is left out: its body and description alike."""
    from lathe.front_matter import FrontMatterError

    catalog = SkillCatalog()
    for origin, folder in skill_roots(workspace):
        for path in _skill_files(folder):
            if read_denied(path, workspace, deny_read):
                continue
            scope = ReadScope(_root(origin, folder, path, workspace), workspace, tuple(deny_read))
            try:
                skill = _load(path, origin, scope)
            except (FrontMatterError, SkillUnreadable) as exc:
                catalog.problems.append(f"skill {path} skipped: {exc}")
                continue
            first = catalog.get(skill.name)
            if first is not None:
                catalog.problems.append(
                    f"skill {path} skipped: {first.path} already names a skill {skill.name!r}"
                )
                continue
            catalog.skills.append(skill)
    return catalog


def read_denied(path: Path, workspace: Path, deny_read: Sequence[str]) -> bool:
    """Whether a read rule covers `path`, as named or where its links lead, when it lies
    in the workspace (a user's own skills folder is outside every rule)."""
    from lathe.policy.rules import matches_any, workspace_names

    return bool(deny_read) and any(
        matches_any(name, deny_read) for name in workspace_names(workspace, path)
    )


def _skill_files(root: Path) -> Iterator[Path]:
    """`root/*/SKILL.md` for each folder in `root`, sorted by folder name, whether or not
    it is there: one missing is said, as a folder skipped unsaid looked read."""
    try:
        folders = sorted(entry for entry in root.iterdir() if entry.is_dir())
    except OSError:
        return
    for folder in folders:
        yield folder / SKILL_FILE


def _root(origin: str, folder: Path, path: Path, workspace: Path) -> Path:
    """The real folder a skill found at `path` may serve files from: the workspace for a
    project's skills (the model can change it, but not make it lead elsewhere); for the
    user's own, their skills folder or, when the user linked SKILL.md out of it, the
    folder it leads to."""
    if origin != "user":
        return _real(workspace)
    real, inside = _real(path), _real(folder)
    return inside if real.is_relative_to(inside) else real.parent


def _load(path: Path, origin: str, scope: ReadScope) -> Skill:
    from lathe.front_matter import FrontMatterError, split_front_matter

    text = scope.text(path, limit=_MAX_SKILL_BYTES)
    values, _ = split_front_matter(text, ("name", "description"))
    if not values:
        raise FrontMatterError("no front matter (a `---` block with name and description)")
    missing = [key for key in ("name", "description") if not values.get(key)]
    if missing:
        raise FrontMatterError(f"the front matter has no {' and no '.join(missing)}")
    name = values["name"]
    if not _NAME.fullmatch(name):
        raise FrontMatterError(
            f"the name {name!r} is not a skill name (letters, digits, '-', '_', '.', ':'; "
            "at most 64)"
        )
    return Skill(name=name, description=" ".join(values["description"].split()), path=path,
                 origin=origin, scope=scope)  # fmt: skip


def _real(path: Path) -> Path:
    try:
        return Path(os.path.realpath(path))
    except (ValueError, OSError) as exc:  # an embedded NUL byte
        raise SkillUnreadable(f"it is not a path a file can have ({exc})") from None


def _read_unlinked(real: Path, limit: int | None) -> bytes:
    """The bytes of the regular file at `real` (a path without links), at most `limit`:
    opened one folder at a time from `/`, following no link, so a link put on its way
    after `real` was checked fails the open instead of leading elsewhere."""
    try:
        folder = os.open("/", _FOLDER)
        try:
            for part in real.parts[1:-1]:
                inner = os.open(part, _FOLDER, dir_fd=folder)
                os.close(folder)
                folder = inner
            handle = os.open(real.name, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK, dir_fd=folder)
        finally:
            os.close(folder)
    except FileNotFoundError:
        raise SkillUnreadable("there is no such file", missing=True) from None
    except OSError as exc:
        if exc.errno in (errno.ELOOP, errno.ENOTDIR) and _real(real) != real:
            raise SkillUnreadable(f"it changed as it was read: it leads to {_real(real)}") from None
        raise SkillUnreadable(f"it cannot be read ({exc.strerror})") from None
    try:
        kind = os.fstat(handle).st_mode
        if stat.S_ISDIR(kind):
            raise SkillUnreadable("it is a directory, not a file")
        if not stat.S_ISREG(kind):
            raise SkillUnreadable("it is not a regular file (a pipe, a device?)")
        with open(handle, "rb", closefd=False) as file:
            data = file.read() if limit is None else file.read(limit + 1)
    finally:
        os.close(handle)
    if limit is not None and len(data) > limit:
        raise SkillUnreadable(f"it is larger than {limit // 1024} KiB")
    return data
