"""Instruction files on a real git tree: which are read, in which order, within which
budget, and the nested ones a tool reaches surviving compaction word for word."""

from __future__ import annotations

import json
import subprocess
from dataclasses import replace
from pathlib import Path

import pytest
from tests.fakes.tools import Dump

from lathe.agent.compaction import ContextManager
from lathe.agent.context import Budget
from lathe.agent.loop import Agent, AgentDeps, AgentSettings
from lathe.events import Compacted, RunStatus
from lathe.exec.local import LocalExecutor
from lathe.hooks.base import AgentHooks, HookChain
from lathe.instructions import Instructions, NestedInstructions, prompt_section
from lathe.llm.base import Completed, ModelRequest
from lathe.tools.base import Limits, ToolContext, ToolRegistry
from lathe.tools.ls import ls
from lathe.types import AssistantMessage, ToolCall


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    """tmp/outer/AGENTS.md (above the repository), repo/.git, repo/AGENTS.md,
    repo/app/CLAUDE.md, repo/app/ws/{AGENTS.md,CLAUDE.md} (the workspace), and below
    it ws/sub/AGENTS.md and ws/sub/deep/CLAUDE.md."""
    (tmp_path / "AGENTS.md").write_text("ABOVE THE REPOSITORY\n")
    repo = tmp_path / "repo"
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    (repo / "AGENTS.md").write_text("root rule\n")
    (repo / "app").mkdir()
    (repo / "app" / "CLAUDE.md").write_text("app rule (claude)\n")
    ws = repo / "app" / "ws"
    (ws / "sub" / "deep").mkdir(parents=True)
    (ws / "AGENTS.md").write_text("workspace rule\n")
    (ws / "CLAUDE.md").write_text("NOT READ: the folder has an AGENTS.md\n")
    (ws / "sub" / "AGENTS.md").write_text("sub rule\n")
    (ws / "sub" / "deep" / "CLAUDE.md").write_text("deep rule\n")
    (ws / "sub" / "deep" / "x.py").write_text("x = 1\n")
    return ws


def test_files_load_from_the_repository_root_down_after_the_users(tree: Path, tmp_path: Path):
    user = tmp_path / "config" / "AGENTS.md"
    user.parent.mkdir()
    user.write_text("user rule\n")

    found = Instructions(tree, user_file=user).standing()

    assert [(f.label, f.text) for f in found] == [
        (str(user), "user rule"),
        ("../../AGENTS.md", "root rule"),
        ("../CLAUDE.md", "app rule (claude)"),
        ("AGENTS.md", "workspace rule"),
    ]
    assert [f.size for f in found] == [10, 10, 18, 15]
    text = prompt_section(found)
    assert text is not None
    assert text.index("user rule") < text.index("root rule") < text.index("workspace rule")
    assert "ABOVE" not in text and "NOT READ" not in text


def test_the_list_of_names_is_configurable(tree: Path):
    found = Instructions(tree, names=["CLAUDE.md"]).standing()
    assert [f.label for f in found] == ["../CLAUDE.md", "CLAUDE.md"]


def test_a_folder_below_the_workspace_is_read_once_when_first_reached(tree: Path):
    found = Instructions(tree)
    found.standing()

    first = found.below("sub/deep/x.py")
    again = found.below("sub/deep")

    assert [(f.label, f.text) for f in first] == [
        ("sub/AGENTS.md", "sub rule"),
        ("sub/deep/CLAUDE.md", "deep rule"),
    ]
    assert again == []
    assert found.below("../../AGENTS.md") == []  # outside the workspace: never
    assert found.below("new/dir/file.py") == []  # not made yet ...
    (tree / "new" / "dir").mkdir(parents=True)
    (tree / "new" / "AGENTS.md").write_text("new rule\n")
    assert [f.label for f in found.below("new/dir/file.py")] == ["new/AGENTS.md"]  # ... then


def test_the_budget_cuts_at_a_line_and_says_where(tree: Path):
    (tree / "AGENTS.md").write_text("".join(f"line {n}\n" for n in range(100)))
    found = Instructions(tree, max_bytes=40)

    loaded = found.standing()

    *earlier, workspace = loaded
    assert [f.cut for f in earlier] == [False, False]  # root rule + app rule: 26 bytes
    assert workspace.cut
    assert workspace.text == (
        "line 0\nline 1\n[AGENTS.md is cut here, 14 of 790 bytes: the budget is spent]"
    )
    assert found.notes == [
        "AGENTS.md was cut after 14 of its 790 bytes: the instruction files of a run "
        "share 40 bytes (memory.instructions_max_bytes)"
    ]
    (nested,) = found.below("sub")
    assert nested.text == "[sub/AGENTS.md is left out, 9 bytes: the budget is spent]"
    assert found.notes[1] == (
        "sub/AGENTS.md was left out (9 bytes): the instruction files of a run share 40 bytes "
        "(memory.instructions_max_bytes)"
    )


def test_a_small_window_holds_the_budget_to_its_share_and_says_so(tree: Path):
    (tree / "AGENTS.md").write_text("".join(f"line {n}\n" for n in range(100)))
    found = Instructions(tree, max_bytes=32 * 1024, window_tokens=100)  # 37 bytes

    *_, workspace = found.standing()

    assert found.budget == 37
    assert workspace.text.startswith("line 0\n[AGENTS.md is cut here, 7 of 790 bytes")
    assert found.notes == [
        "AGENTS.md was cut after 7 of its 790 bytes: the instruction files of a run share "
        "37 bytes, 12.5% of the model's 100-token window (a larger window gets more: the "
        "model's context_window, local.ctx_size for the local model)"
    ]
    assert Instructions(tree, max_bytes=20, window_tokens=100_000).budget == 20


def test_an_agents_md_that_cannot_be_read_leaves_the_folders_claude_md(tree: Path):
    # An AGENTS.md leading out of the repository was skipped, and so was CLAUDE.md.
    outside = tree.parent.parent.parent / "elsewhere.md"
    outside.write_text("NOT READ: outside\n")
    (tree / "sub" / "AGENTS.md").unlink()
    (tree / "sub" / "AGENTS.md").symlink_to(outside)
    (tree / "sub" / "CLAUDE.md").write_text("sub rule (claude)\n")
    found = Instructions(tree)
    found.standing()

    (nested,) = found.below("sub")

    assert (nested.label, nested.text) == ("sub/CLAUDE.md", "sub rule (claude)")


def test_a_read_rule_keeps_a_file_out(tree: Path):
    found = Instructions(tree, no_read=["sub/AGENTS.md"])
    found.standing()
    assert [f.label for f in found.below("sub/deep/x.py")] == ["sub/deep/CLAUDE.md"]


class LooksThenDumps:
    """Lists `sub` first (which loads sub/AGENTS.md), then dumps large logs: their
    output prunes the listing, then compaction replaces it; records every request."""

    def __init__(self, turns: int) -> None:
        self.turns = turns
        self.requests: list[ModelRequest] = []

    @property
    def model(self) -> str:
        return "scripted"

    async def stream(self, request: ModelRequest):
        if not request.tools:  # the summariser
            yield Completed(AssistantMessage(text="Goal: dump logs. Progress: some."))
            return
        self.requests.append(request)
        step = len(self.requests)
        if step >= self.turns:
            yield Completed(AssistantMessage(text="done"))
            return
        name, args = ("ls", {"path": "sub"}) if step == 1 else ("dump", {"n": step})
        yield Completed(
            AssistantMessage(
                tool_calls=(ToolCall(id=f"c{step}", name=name, arguments=json.dumps(args)),)
            )
        )

    async def aclose(self) -> None:
        return None


async def test_an_instruction_file_loaded_mid_run_survives_pruning_and_compaction(tree: Path):
    budget = Budget(
        context_window=5_000, output_reserve=1_000, tool_output_keep_tokens=1_600,
        recent_keep_tokens=1_500,
    )  # fmt: skip
    model = LooksThenDumps(turns=30)
    events: list = []
    tools = ToolRegistry([ls, Dump()])
    found = Instructions(tree)
    found.standing()
    hooks = NestedInstructions(found, tools, on_cut=lambda cut: None)
    deps = AgentDeps(
        provider=model,
        tools=tools,
        tool_context=ToolContext(tree, LocalExecutor(), tree, None),
        system_prompt="test",
        settings=AgentSettings(max_turns=40, stall_repeat_limit=100),
        hooks=hooks,
        context=ContextManager(
            budget, model, events.append, fixed_tokens=200, kept_verbatim=hooks.kept_verbatim
        ),
    )

    finished = await Agent(deps, events.append).run("Dump the logs, then say done.")

    assert finished.status is RunStatus.UNVERIFIED
    assert any(isinstance(e, Compacted) for e in events)
    wanted = (
        "[Instructions from sub/AGENTS.md, for the work under sub/; follow them there:]\nsub rule"
    )
    pruned_before_compaction = 0
    for request in model.requests[1:]:
        texts = [m.content for m in request.messages if not isinstance(m, AssistantMessage)]
        assert sum(wanted in text for text in texts) == 1
        listing = [m for m in request.messages if getattr(m, "tool_call_id", "") == "c1"]
        pruned_before_compaction += bool(listing and listing[0].content.startswith("[pruned"))
    assert pruned_before_compaction  # the file's tool output was gone, the file was not


class Pads(AgentHooks):
    """A later after_tool hook that puts 50,000 characters before what it got, as a
    post_tool command may."""

    async def after_tool(self, name, arguments, output):
        return replace(output, content="Z" * 50_000 + output.content)


class ListsSub:
    def __init__(self) -> None:
        self.requests: list[ModelRequest] = []

    @property
    def model(self) -> str:
        return "scripted"

    async def stream(self, request: ModelRequest):
        self.requests.append(request)
        if len(self.requests) > 1:
            yield Completed(AssistantMessage(text="done"))
            return
        call = ToolCall(id="c1", name="ls", arguments=json.dumps({"path": "sub"}))
        yield Completed(AssistantMessage(tool_calls=(call,)))

    async def aclose(self) -> None:
        return None


async def test_the_cap_holds_what_a_later_hook_adds_and_never_cuts_a_nested_file(tree: Path):
    (tree / "sub" / "AGENTS.md").write_text(
        "".join(f"sub rule {n}\n" for n in range(400))  # 5 KB: more than the cap
    )
    model = ListsSub()
    tools = ToolRegistry([ls])
    found = Instructions(tree)
    found.standing()
    nested = NestedInstructions(found, tools, on_cut=lambda cut: None)
    limits = Limits(output_max_bytes=3_000)
    deps = AgentDeps(
        provider=model,
        tools=tools,
        tool_context=ToolContext(tree, LocalExecutor(), tree, None, limits=limits),
        system_prompt="test",
        settings=AgentSettings(max_turns=3),
        hooks=HookChain([nested, Pads()]),
    )

    await Agent(deps, [].append).run("List sub.")

    (result,) = [m for m in model.requests[1].messages if getattr(m, "tool_call_id", "")]
    (text,) = nested.kept_verbatim()
    assert result.content.endswith("\n\n" + text)
    rest = result.content.removesuffix("\n\n" + text)
    assert "omitted" in rest and len(rest.encode()) <= limits.output_max_bytes
