"""Skills: folders holding a `SKILL.md`, whose name and description the model sees up
front and whose body it reads only when it uses the skill (the `skill` tool).

Where skills are found, in this order (the first skill of a name wins, a later one of
the same name is skipped with a notice): `<workspace>/.lathe/skills/NAME/SKILL.md`, the
user's `skills/` folder beside the user config file (`lathe config path`), and
`<workspace>/.claude/skills/NAME/SKILL.md` (Claude Code's layout, read as it is).
SKILL.md starts with front matter giving `name` and `description` (see
`lathe.front_matter`: one-line values, not full YAML); a file whose front matter is
missing, unreadable or lacks either key is skipped with a one-line problem naming it.

A skill is text for the model and runs nothing, so a project's skills need no trust. A
project SKILL.md that is a link leading outside the workspace is skipped: it could hand
the model any file of the machine.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path

SKILL_FILE = "SKILL.md"
_MAX_SKILL_BYTES = 256 * 1024
_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.:-]{0,63}")


@dataclass(frozen=True)
class Skill:
    name: str
    description: str
    path: Path  # the SKILL.md
    origin: str  # "project", "user" or "claude"

    @property
    def folder(self) -> Path:
        return self.path.parent

    def body(self) -> str:
        """The text after the front matter, read now (the skill may have changed)."""
        from lathe.front_matter import split_front_matter

        _, body = split_front_matter(_read(self.path), ("name", "description"))
        return body.strip()


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
    for origin, root in skill_roots(workspace):
        confine = workspace if origin != "user" else None
        for path in _skill_files(root, confine, catalog.problems):
            if read_denied(path, workspace, deny_read):
                continue
            try:
                skill = _load(path, origin)
            except (FrontMatterError, OSError, UnicodeDecodeError) as exc:
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


def _skill_files(root: Path, confine: Path | None, problems: list[str]) -> Iterator[Path]:
    """Each `root/*/SKILL.md` that is a regular file, sorted by folder name; with
    `confine`, only those whose real path lies inside it (each other one named in
    `problems`: skipped unsaid, a linked team folder looked read)."""
    try:
        folders = sorted(entry for entry in root.iterdir() if entry.is_dir())
    except OSError:
        return
    inside = Path(os.path.realpath(confine)) if confine is not None else None
    for folder in folders:
        path = folder / SKILL_FILE
        real = Path(os.path.realpath(path))
        if not real.is_file():
            continue
        if inside is not None and not real.is_relative_to(inside):
            problems.append(f"skill {path} skipped: it is a link to {real}, outside the workspace")
            continue
        yield path


def _load(path: Path, origin: str) -> Skill:
    from lathe.front_matter import FrontMatterError, split_front_matter

    values, _ = split_front_matter(_read(path), ("name", "description"))
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
                 origin=origin)  # fmt: skip


def _read(path: Path) -> str:
    with path.open("rb") as file:
        data = file.read(_MAX_SKILL_BYTES + 1)
    if len(data) > _MAX_SKILL_BYTES:
        raise OSError(f"it is larger than {_MAX_SKILL_BYTES // 1024} KiB")
    return data.decode("utf-8")
