"""Permission rules: `bash(git diff:*)`, `bash(npm test)`, `edit(src/**)`, `read(.env)`,
`mcp__server__tool`. Precedence between lists is deny > ask > allow.

Path patterns follow .gitignore habits: a pattern without a slash matches that name at
any depth (`.env`, `*.pem`); one with a slash is anchored at the workspace root
(`src/**`); `**` crosses directories. A `read(...)` rule guards the content of a path,
so a denied read holds for every tool that could reveal it, `bash` included. An
`edit(...)` rule is about changing the files, so it covers `write` too; inside the
sandbox a denied edit holds for `bash` as well (the paths are mounted read-only).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from typing import TYPE_CHECKING, Literal

from lathe.errors import UsageError

if TYPE_CHECKING:
    from lathe.policy.shell_parse import SimpleCommand

Action = Literal["allow", "ask", "deny"]
_RULE = re.compile(r"^(?P<tool>[A-Za-z0-9_\-]+)(?:\((?P<pattern>.*)\))?$")
PATH_TOOLS = {"read", "edit", "write", "grep", "glob", "ls"}
# A rule named for the key covers these tools as well: it guards what they change.
_COVERS = {"edit": {"edit", "write"}}


@dataclass(frozen=True)
class Rule:
    tool: str
    pattern: str | None  # None: every use of the tool

    @property
    def key(self) -> str:
        return self.tool if self.pattern is None else f"{self.tool}({self.pattern})"


def parse_rule(text: str) -> Rule:
    match = _RULE.match(text.strip())
    if not match:
        raise UsageError(
            f"cannot read the permission rule {text!r}: write it as TOOL or TOOL(PATTERN), "
            "e.g. bash(git diff:*), edit(src/**), read(.env)"
        )
    pattern = match.group("pattern")
    return Rule(match.group("tool"), pattern.strip() if pattern is not None else None)


def path_matches(relative_path: str, pattern: str) -> bool:
    path = relative_path.strip("/")
    if "/" not in pattern.strip("/"):
        # Any component; `_glob` lets a match cover everything below it.
        return any(_glob(pattern)(part) for part in path.split("/"))
    return bool(_glob(pattern.lstrip("/").removeprefix("./"))(path))


def matches_any(relative_path: str, patterns: Iterable[str]) -> bool:
    return any(path_matches(relative_path, pattern) for pattern in patterns)


@lru_cache(maxsize=512)
def _glob(pattern: str):
    regex, index = "", 0
    while index < len(pattern):
        if pattern.startswith("**/", index):
            regex, index = regex + "(?:.*/)?", index + 3
        elif pattern.startswith("**", index):
            regex, index = regex + ".*", index + 2
        elif pattern[index] == "*":
            regex, index = regex + "[^/]*", index + 1
        elif pattern[index] == "?":
            regex, index = regex + "[^/]", index + 1
        else:
            regex, index = regex + re.escape(pattern[index]), index + 1
    return re.compile(regex + "(?:/.*)?$").match


@dataclass
class RuleSet:
    allow: list[Rule] = field(default_factory=list)
    ask: list[Rule] = field(default_factory=list)
    deny: list[Rule] = field(default_factory=list)

    @classmethod
    def from_strings(
        cls, allow: Iterable[str] = (), ask: Iterable[str] = (), deny: Iterable[str] = ()
    ) -> RuleSet:
        return cls(
            [parse_rule(r) for r in allow],
            [parse_rule(r) for r in ask],
            [parse_rule(r) for r in deny],
        )

    def denied_read_patterns(self) -> list[str]:
        return [r.pattern for r in self.deny if r.tool == "read" and r.pattern]

    def denied_edit_patterns(self) -> list[str]:
        return [r.pattern for r in self.deny if r.tool == "edit" and r.pattern]

    def for_path(self, tool: str, relative_path: str) -> tuple[Action, Rule] | None:
        """The strongest rule about `tool` touching `relative_path`; read-deny rules
        apply to every tool."""
        for action, rules in (("deny", self.deny), ("ask", self.ask), ("allow", self.allow)):
            for rule in rules:
                applies = tool in _COVERS.get(rule.tool, {rule.tool}) or (
                    action == "deny" and rule.tool == "read"
                )
                if applies and (rule.pattern is None or path_matches(relative_path, rule.pattern)):
                    return action, rule  # type: ignore[return-value]
        return None

    def for_commands(self, commands: Sequence[SimpleCommand]) -> tuple[Action, Rule] | None:
        """deny or ask if any simple command matches; allow only if every one does."""
        from lathe.policy.command import matches_rule

        def matches(command: SimpleCommand, rule: Rule) -> bool:
            return rule.pattern is None or matches_rule(command, rule.pattern)

        for action, rules in (("deny", self.deny), ("ask", self.ask)):
            for rule in rules:
                if rule.tool == "bash" and any(matches(c, rule) for c in commands):
                    return action, rule  # type: ignore[return-value]
        bash_allows = [r for r in self.allow if r.tool == "bash"]
        if commands and bash_allows:
            matched = [next((r for r in bash_allows if matches(c, r)), None) for c in commands]
            if all(matched):
                return "allow", matched[0]  # type: ignore[return-value]
        return None

    def for_tool(self, tool: str) -> tuple[Action, Rule] | None:
        for action, rules in (("deny", self.deny), ("ask", self.ask), ("allow", self.allow)):
            for rule in rules:
                if rule.tool == tool and rule.pattern is None:
                    return action, rule  # type: ignore[return-value]
        return None
