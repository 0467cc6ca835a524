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
of the parent's tools, no others); `approval` can only make a child stricter than its
parent, never looser; a profile whose tools change nothing, or whose approval is
read-only, runs like `explore`. The body is the child's standing instructions, put
before each brief. A file that cannot be read is reported by name, not skipped in
silence.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from lathe.front_matter import FrontMatterError, split_front_matter

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
    """The profiles found for a workspace, and the files that could not be read."""

    by_name: dict[str, AgentProfile]
    problems: tuple[str, ...] = ()

    def get(self, name: str) -> AgentProfile | None:
        return self.by_name.get(name)


def user_agents_dir() -> Path:
    from lathe.config.loader import user_config_path

    return user_config_path().parent / "agents"


def find_profiles(workspace: Path, user_dir: Path | None = None) -> Profiles:
    found = dict(BUILT_IN)
    problems = []
    roots = (("user", user_dir or user_agents_dir()), ("project", workspace / ".lathe" / "agents"))
    for origin, root in roots:
        if not root.is_dir():
            continue
        for path in sorted(root.glob("*.md")):
            try:
                found[path.stem] = _load(path, origin)
            except (OSError, UnicodeDecodeError, FrontMatterError, ValueError) as exc:
                problems.append(f"{path}: {exc}")
    return Profiles(found, tuple(problems))


def stricter_approval(parent: str, profile: str | None) -> str:
    """The stricter of the two approval modes (`profile` None: the parent's)."""
    if profile is None:
        return parent
    return min(parent, profile, key=_APPROVALS.index)


def _load(path: Path, origin: str) -> AgentProfile:
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
    tools = values.get("tools")
    return AgentProfile(
        name=path.stem,
        description=description,
        instructions=body.strip(),
        model=values.get("model") or None,
        tools=tuple(t.strip() for t in tools.split(",") if t.strip()) if tools else None,
        approval=approval,
        max_turns=int(turns) if turns else None,
        origin=origin,
        path=path,
    )
