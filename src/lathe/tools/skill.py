"""The `skill` tool: a skill's instructions, read when the model decides to use it.

The system prompt lists the skills' names and descriptions (within a budget); this tool
returns a skill's SKILL.md body with its folder, and the other files of that folder by
name so the model can open them: `file` reads one of them (a user's skills folder lies
outside the workspace, where `read` does not go). Called with no name, it lists every
skill, those the prompt had no room for included. Read-only: it never runs anything.
Every read is checked again when it is made (`lathe.skills.ReadScope`): the model may
have linked a skill's file, or its folder, elsewhere since the skills were found.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from pathlib import Path

from pydantic import Field
from pydantic.json_schema import SkipJsonSchema

from lathe.errors import ToolError
from lathe.plural import plural
from lathe.skills import Skill, SkillCatalog, SkillUnreadable
from lathe.tools.base import Params, Tool, ToolContext, ToolOutput, ToolRegistry

_MAX_LISTED_FILES = 50


class SkillParams(Params):
    name: str | SkipJsonSchema[None] = Field(
        default=None, description="The skill's name (omit it to list every skill)."
    )
    file: str | SkipJsonSchema[None] = Field(
        default=None,
        description="A file in the skill's folder to read instead of SKILL.md, by its "
        "path relative to that folder.",
    )


class SkillTool(Tool):
    name = "skill"
    description = (
        "Read a skill: the instructions for a kind of task, listed under Skills in the "
        "system prompt. Call it before starting such a task. With no name, lists every "
        "skill with its description."
    )
    parameters = SkillParams
    read_only = True

    def __init__(self, catalog: SkillCatalog) -> None:
        self.catalog = catalog

    def summarize_call(self, args: SkillParams) -> str:
        return " ".join(part for part in (args.name, args.file) if part) or "(list)"

    async def execute(self, args: SkillParams, ctx: ToolContext) -> ToolOutput:
        if not args.name:
            return self._listing()
        skill = self.catalog.get(args.name)
        if skill is None:
            known = ", ".join(self.catalog.names()) or "none: there are no skills here"
            raise ToolError(f"no skill named {args.name!r}; the skills are: {known}")
        if args.file:
            return _folder_file(skill, args.file, ctx)
        try:
            body = skill.body()
        except ValueError as exc:  # SkillUnreadable, or front matter it can no longer read
            raise ToolError(
                f"the skill {skill.name!r} ({skill.path}) cannot be read: {exc}"
            ) from exc
        others = _folder_files(skill)
        files = (
            "\n\nOther files in its folder (read one with skill(name, file)):\n" + "\n".join(others)
            if others
            else ""
        )
        return ToolOutput(
            content=f"Skill {skill.name} (folder: {skill.folder}):\n\n{body}{files}",
            summary=plural(len(body.splitlines()), "line"),
            details={"path": str(skill.path)},
        )

    def _listing(self) -> ToolOutput:
        skills = self.catalog.skills
        if not skills:
            return ToolOutput(content="There are no skills in this workspace.", summary="none")
        lines = [f"- {s.name}: {s.description}" for s in skills]
        return ToolOutput(
            content=f"Skills ({len(skills)}):\n" + "\n".join(lines),
            summary=plural(len(skills), "skill"),
        )


def _folder_files(skill: Skill) -> list[str]:
    """The files of the skill's folder but SKILL.md, relative to it, sorted; at most a
    few dozen; none when the folder now leads out of the skill's scope."""
    folder = os.path.realpath(skill.folder)
    if not Path(folder).is_relative_to(skill.scope.root):
        return []
    found: list[str] = []
    for root, dirs, files in os.walk(folder):
        dirs[:] = sorted(d for d in dirs if not d.startswith("."))
        for name in sorted(files):
            relative = os.path.relpath(os.path.join(root, name), folder)
            if relative != "SKILL.md":
                found.append(relative)
            if len(found) > _MAX_LISTED_FILES:
                return [*found[:_MAX_LISTED_FILES], "..."]
    return found


def _folder_file(skill: Skill, name: str, ctx: ToolContext) -> ToolOutput:
    """One file of the skill's folder, read as `Skill.file` allows."""
    try:
        text = skill.file(name)
    except SkillUnreadable as exc:
        problem = f"the skill {skill.name!r}: {name} cannot be read: {exc}"
        if exc.missing:
            problem += f"; its folder's files: {', '.join(_folder_files(skill)) or 'none'}"
        raise ToolError(problem) from None
    from lathe.tools.capping import capped

    return capped(text, ctx, summary=plural(len(text.splitlines()), "line"))


def skill_tools(
    workspace: Path, on_problem: Callable[[str], None], deny_read: Sequence[str] = ()
) -> list[Tool]:
    """The `skill` tool over the workspace's skills, or [] when it has none; each skill
    skipped (bad front matter, a name taken) goes to `on_problem` as one line, and one a
    read rule covers is left out."""
    from lathe.skills import discover_skills

    catalog = discover_skills(workspace, deny_read)
    for problem in catalog.problems:
        on_problem(problem)
    return [SkillTool(catalog)] if catalog.skills else []


def skill_catalog(tools: ToolRegistry) -> SkillCatalog | None:
    """The skills the run's `skill` tool serves; None when the run has none."""
    found = tools.get(SkillTool.name)
    return found.catalog if isinstance(found, SkillTool) else None
