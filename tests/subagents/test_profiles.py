"""Subagent profiles: built-in, the user's and the project's Markdown files, what each
gives a child, and a file that cannot be read said by name (issue 17, item 5)."""

from __future__ import annotations

from pathlib import Path

from tests.e2e.test_calculator import lathe
from tests.fakes.openai_server import Call, Reply
from tests.subagents.test_task_tool import Script, _first_user_text, _project, _run, _task

from lathe.subagents.profiles import find_profiles, stricter_approval

REVIEWER = """---
description: Reviews code for bugs
model: cheap-model
tools: read, grep
approval: auto
max_turns: 3
---
You review code. Name each bug with its file and line.
"""


def _agents(root: Path, **files: str) -> None:
    (root / ".lathe" / "agents").mkdir(parents=True, exist_ok=True)
    for name, text in files.items():
        (root / ".lathe" / "agents" / f"{name}.md").write_text(text)


def test_profiles_come_from_the_project_over_the_user_over_the_built_in(tmp_path) -> None:
    user = tmp_path / "user-agents"
    user.mkdir()
    (user / "reviewer.md").write_text("---\ndescription: the user's\n---\n")
    (user / "explore.md").write_text("---\ndescription: my explorer\ntools: read\n---\nLook.\n")
    ws = tmp_path / "ws"
    _agents(ws, reviewer=REVIEWER, broken="---\ndescription: x\ntools:\n  - read\n---\n")

    found = find_profiles(ws, user_dir=user)

    assert set(found.by_name) == {"general", "explore", "reviewer"}
    reviewer = found.get("reviewer")
    assert reviewer is not None and reviewer.origin == "project"
    assert (reviewer.model, reviewer.tools, reviewer.max_turns) == (
        "cheap-model",
        ("read", "grep"),
        3,
    )
    assert reviewer.instructions == "You review code. Name each bug with its file and line."
    assert reviewer.read_only  # read and grep change nothing
    explore = found.get("explore")
    assert explore is not None and explore.origin == "user" and explore.instructions == "Look."
    (problem,) = found.problems
    assert "broken.md" in problem and "line 4" in problem


def test_a_profile_may_make_a_child_stricter_never_looser() -> None:
    assert stricter_approval("auto", "read-only") == "read-only"
    assert stricter_approval("ask", "full") == "ask"
    assert stricter_approval("auto", None) == "auto"


def test_a_project_profile_gives_its_child_its_model_tools_turns_and_instructions(
    tmp_path, fake_openai
) -> None:
    ws = _project(tmp_path)
    _agents(ws, reviewer=REVIEWER)
    fake_openai.responder = Script(
        parent=[
            Reply(calls=[_task("review", "[child R] review a.py", agent="reviewer")]),
            Reply("done"),
        ],
        children={"[child R]": [Reply(calls=[Call("read", {"path": "a.py"})])]},
    )

    result = _run(fake_openai, ws, tmp_path, "review")

    assert result.returncode == 0, result.stderr[-3000:]
    child = [b for b in fake_openai.chat_bodies() if "[child R]" in _first_user_text(b)]
    assert len(child) == 3  # max_turns: 3
    assert {b["model"] for b in child} == {"cheap-model"}
    assert sorted(t["function"]["name"] for t in child[0]["tools"]) == ["grep", "read"]
    assert _first_user_text(child[0]).startswith("You review code.")
    parent = next(b for b in fake_openai.chat_bodies() if "[child" not in _first_user_text(b))
    task = next(t for t in parent["tools"] if t["function"]["name"] == "task")
    assert "reviewer: Reviews code for bugs" in task["function"]["description"]


def test_agents_list_shows_them_and_fails_on_a_file_it_cannot_read(tmp_path) -> None:
    ws = tmp_path / "ws"
    _agents(ws, reviewer=REVIEWER)
    env = {"LATHE_HOME": str(tmp_path / "home"), "XDG_CONFIG_HOME": str(tmp_path / "cfg")}

    listed = lathe("agents", "list", "-C", str(ws), cwd=tmp_path, env_extra=env)
    _agents(ws, broken="no front matter, no description\n")
    failing = lathe("agents", "list", "-C", str(ws), cwd=tmp_path, env_extra=env)

    assert listed.returncode == 0, listed.stderr
    rows = {line.split()[0]: line for line in listed.stdout.splitlines()[1:]}
    assert set(rows) == {"explore", "general", "reviewer"}
    assert "read, grep" in rows["reviewer"] and "Reviews code for bugs" in rows["reviewer"]
    assert failing.returncode == 1
    assert "broken.md" in failing.stderr and "description" in failing.stderr
