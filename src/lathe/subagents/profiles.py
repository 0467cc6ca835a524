"""Subagent profiles: what kind of child a `task` call starts.

Built in: `general` (every tool, its own worktree) and `explore` (the read-only tools, in
the parent's workspace, changes nothing). More come from Markdown files, the project's
`.lathe/agents/NAME.md` over the user's `agents/NAME.md` (beside the user config file)
over the built-in ones of the same name:

    ---
    description: Reviews a diff for bugs
    model: gpt-4o-mini
    tools: read, grep, glob
    approval: read-only
    max_turns: 10
    ---
    You review changes. Report each bug with its file and line.

Every key is optional but `description`. `tools` is an allow list (the child gets those
of the parent's tools, no others) of lathe's tool names, a loaded plugin's or an MCP
tool's, or `*` globs of them (`mcp__docs__*`) as in a rule: a name it does not know
refuses the profile, as a hook's does (Claude Code's `Read, Grep` had given the child no
tools at all); an MCP tool is judged when a task call names the profile, against the
run's (`parent_tools.lacking_mcp_tools`); `approval` can only make a child
stricter than its parent, never looser; a profile whose tools change nothing, or whose
approval is read-only, runs like `explore`. The body is the child's standing
instructions, put before each brief. A file that cannot be read or is refused is
reported by name, not skipped in silence.
"""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass, field
from pathlib import Path

from lathe.front_matter import FrontMatterError, split_front_matter
from lathe.policy.rules import unknown_tools
from lathe.subagents.task_tool import TaskTool
from lathe.tools.builtin import OWN_TOOL_NAMES

_KEYS = ("description", "model", "tools", "approval", "max_turns")
_APPROVALS = ("read-only", "ask", "auto", "full")  # strictest first
READ_ONLY_TOOLS = ("read", "grep", "glob", "ls")


@dataclass(frozen=True)
class AgentProfile:
    name: str
    description: str
    instructions: str = ""
    model: str | None = None
    tools: tuple[str, ...] | None = None  # None: every tool of the parent's
    approval: str | None = None  # None: the parent's
    max_turns: int | None = None  # None: agents.max_turns
    origin: str = "built-in"  # "built-in", "user", or "project"
    path: Path | None = None

    @property
    def read_only(self) -> bool:
        """Whether the child changes nothing: it then runs in the parent's workspace."""
        if self.approval == "read-only":
            return True
        return self.tools is not None and set(self.tools) <= set(READ_ONLY_TOOLS)


BUILT_IN = {
    "general": AgentProfile(
        "general", "works on its own copy of the workspace with every tool; its changes come back"
    ),
    "explore": AgentProfile(
        "explore",
        "reads the workspace as it is, with the read-only tools; changes nothing",
        tools=READ_ONLY_TOOLS,
        approval="read-only",
    ),
}


@dataclass(frozen=True)
class Profiles:
    """The profiles found for a workspace, and the files that could not be read or were
    refused (`problems`; `refused`, each such one's problem by its profile's name)."""

    by_name: dict[str, AgentProfile]
    problems: tuple[str, ...] = ()
    refused: dict[str, str] = field(default_factory=dict)

    def get(self, name: str) -> AgentProfile | None:
        return self.by_name.get(name)


def user_agents_dir() -> Path:
    from lathe.config.loader import user_config_path

    return user_config_path().parent / "agents"


def find_profiles(
    workspace: Path, user_dir: Path | None = None, known_tools: Collection[str] = ()
) -> Profiles:
    """The profiles for `workspace`. A profile's `tools` may name lathe's own tools, the
    task tool, an MCP tool and `known_tools` (the plugins' that loaded, those a run adds
    later)."""
    found = dict(BUILT_IN)
    problems, refused = [], {}
    known = {*OWN_TOOL_NAMES, TaskTool.name, *known_tools}
    roots = (("user", user_dir or user_agents_dir()), ("project", workspace / ".lathe" / "agents"))
    for origin, root in roots:
        if not root.is_dir():
            continue
        for path in sorted(root.glob("*.md")):
            try:
                found[path.stem] = _load(path, origin, known)
            except (OSError, UnicodeDecodeError, FrontMatterError, ValueError) as exc:
                problems.append(f"{path}: {exc}")
                refused[path.stem] = problems[-1]
    return Profiles(found, tuple(problems), refused)


def stricter_approval(parent: str, profile: str | None) -> str:
    """The stricter of the two approval modes (`profile` None: the parent's)."""
    if profile is None:
        return parent
    return min(parent, profile, key=_APPROVALS.index)


def _load(path: Path, origin: str, known_tools: Collection[str]) -> AgentProfile:
    values, body = split_front_matter(path.read_text(encoding="utf-8"), _KEYS)
    description = values.get("description", "").strip()
    if not description:
        raise ValueError("no `description:` in the front matter; say in a line what it does")
    approval = values.get("approval") or None
    if approval is not None and approval not in _APPROVALS:
        raise ValueError(f"approval {approval!r} is none of {', '.join(_APPROVALS)}")
    turns = values.get("max_turns") or None
    if turns is not None and not (turns.isdigit() and int(turns) > 0):
        raise ValueError(f"max_turns {turns!r} is not a whole number above 0")
    listed = values.get("tools")
    tools = tuple(t.strip() for t in listed.split(",") if t.strip()) if listed else None
    if tools is not None and (problem := _unknown_tools_problem(tools, known_tools)):
        raise ValueError(problem)
    return AgentProfile(
        name=path.stem,
        description=description,
        instructions=body.strip(),
        model=values.get("model") or None,
        tools=tools,
        approval=approval,
        max_turns=int(turns) if turns else None,
        origin=origin,
        path=path,
    )


def _unknown_tools_problem(tools: tuple[str, ...], known: Collection[str]) -> str | None:
    """Why `tools` names a tool no child could get, and the fix; None when all are
    known (as hooks and rules judge tool names: `policy.rules.unknown_tools`)."""
    unknown = unknown_tools(tools, known)
    if not unknown:
        return None
    if all(unknown.values()):  # known tools, misspelt or capitalised
        fixed = ", ".join(dict.fromkeys(unknown.get(t) or t for t in tools))
        return (
            f"`tools:` names {', '.join(map(repr, unknown))}, which lathe does not have "
            f"(tool names are lower case); did you mean `tools: {fixed}`?"
        )
    said = ", ".join(
        f"{name!r} (did you mean {meant!r}?)" if meant else repr(name)
        for name, meant in unknown.items()
    )
    return (
        f"`tools:` names {said}, which neither lathe nor a plugin that loaded has "
        f"(`lathe plugins` lists them); name some of {', '.join(sorted(known))}, or an MCP "
        "tool as mcp__SERVER__TOOL"
    )
