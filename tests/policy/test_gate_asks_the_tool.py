"""The gate asks each tool what it is (read-only, which argument is its path, which
command it runs) instead of keeping lists of tool names."""

from __future__ import annotations

from pathlib import Path
from typing import Any, ClassVar

import pytest

from lathe.policy.gate import Mode, Policy
from lathe.policy.rules import RuleSet
from lathe.tools.base import Params, Tool, ToolContext, ToolOutput, ToolRegistry


class _Args(Params):
    target: str = ""
    line: str = ""


class _Fake(Tool):
    description: ClassVar[str] = "a tool no list names"
    parameters: ClassVar[type[Params]] = _Args

    async def execute(self, args: Any, ctx: ToolContext) -> ToolOutput:
        return ToolOutput(content="")


class Peek(_Fake):
    name: ClassVar[str] = "peek"
    read_only: ClassVar[bool] = True
    path_argument: ClassVar[str | None] = "target"


class Put(_Fake):
    name: ClassVar[str] = "put"
    path_argument: ClassVar[str | None] = "target"


class Shell(_Fake):
    name: ClassVar[str] = "sh"
    repeatable: ClassVar[bool] = True

    def shell_command(self, arguments: dict[str, Any]) -> str | None:
        return str(arguments.get("line", ""))


def decide(tmp_path: Path, mode: str, tool: str, arguments: dict, **rules) -> str:
    policy = Policy(
        Mode(mode), RuleSet.from_strings(**rules), tmp_path, Path.home(), sandboxed=True,
        tools=ToolRegistry([Peek(), Put(), Shell()]),
    )  # fmt: skip
    return policy.decide(tool, arguments).action


@pytest.mark.parametrize(
    ("mode", "tool", "arguments", "rules", "expected"),
    [
        ("read-only", "peek", {"target": "a.py"}, {}, "allow"),
        ("ask", "peek", {"target": "a.py"}, {}, "allow"),
        ("read-only", "put", {"target": "a.py"}, {}, "deny"),
        ("ask", "put", {"target": "a.py"}, {}, "ask"),
        # A read rule is matched against the tool's own path argument.
        ("auto", "peek", {"target": "config/.env"}, {"deny": ["read(.env)"]}, "deny"),
        # An edit rule covers every tool that changes files, as it covers write.
        ("auto", "put", {"target": "tests/t.py"}, {"deny": ["edit(tests/**)"]}, "deny"),
        ("auto", "peek", {"target": "tests/t.py"}, {"deny": ["edit(tests/**)"]}, "allow"),
        # A protected path asks before any tool that changes files changes it.
        ("auto", "put", {"target": ".mcp.json"}, {}, "ask"),
        # The command a tool runs goes through the command guard and the bash rules.
        ("full", "sh", {"line": "rm -rf /"}, {}, "deny"),
        ("auto", "sh", {"line": "git status"}, {"deny": ["bash(git status)"]}, "deny"),
        ("auto", "sh", {"line": "pytest -q"}, {}, "allow"),
    ],
)
def test_the_gate_judges_a_tool_by_what_it_declares(
    tmp_path, mode, tool, arguments, rules, expected
) -> None:
    assert decide(tmp_path, mode, tool, arguments, **rules) == expected


def test_a_name_no_tool_has_is_judged_as_changing_files(tmp_path) -> None:
    assert decide(tmp_path, "read-only", "mystery", {}) == "deny"
    assert decide(tmp_path, "ask", "mystery", {}) == "ask"
