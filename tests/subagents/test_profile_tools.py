"""A profile's `tools:` naming tools lathe does not have (Claude Code's `Read, Grep,
Edit`) is refused as a hook's misspelt tool is: `lathe agents list` names the fix and
exits 1, and a task call naming the profile is told how to fix it. Before, the child
silently got no tools at all and still ended `completed`. MCP tools and the tools of
plugins that loaded are names a profile may use."""

from __future__ import annotations

from pathlib import Path

from tests.e2e.test_calculator import lathe
from tests.fakes.openai_server import Call, Reply
from tests.plugins.test_plugins import install_plugins
from tests.plugins.test_plugins import lathe as lathe_with_plugins
from tests.subagents.test_task_tool import Script, _first_user_text, _project, _results, _run, _task


def _agents(ws: Path, **files: str) -> None:
    folder = ws / ".lathe" / "agents"
    folder.mkdir(parents=True, exist_ok=True)
    for name, tools in files.items():
        (folder / f"{name}.md").write_text(f"---\ndescription: {name}\ntools: {tools}\n---\nGo.\n")


def _listed(stdout: str) -> set[str]:
    return {line.split()[0] for line in stdout.splitlines()[1:] if line.strip()}


def test_agents_list_refuses_capitalised_tool_names_and_says_how_to_write_them(tmp_path) -> None:
    ws = tmp_path / "ws"
    _agents(ws, rev="Read, Grep, Edit", ok="read, grep, mcp__github__get_issue")
    env = {"LATHE_HOME": str(tmp_path / "home"), "XDG_CONFIG_HOME": str(tmp_path / "cfg")}

    listed = lathe("agents", "list", "-C", str(ws), cwd=tmp_path, env_extra=env)

    assert listed.returncode == 1, listed.stdout
    assert _listed(listed.stdout) == {"explore", "general", "ok"}
    (problem,) = [line for line in listed.stderr.splitlines() if "rev.md" in line]
    assert "'Read'" in problem and "tools: read, grep, edit" in problem, problem


def test_a_task_call_naming_such_a_profile_is_told_how_to_fix_it(tmp_path, fake_openai) -> None:
    ws = _project(tmp_path)
    _agents(ws, rev="Read, Grep, Edit")
    fake_openai.responder = Script(
        parent=[Reply(calls=[_task("review", "[child R] review a.py", agent="rev")]),
                Reply("done")],
        children={"[child R]": [Reply(calls=[Call("read", {"path": "a.py"})]), Reply("ok")]},
    )  # fmt: skip

    result = _run(fake_openai, ws, tmp_path, "review")

    assert result.returncode == 0, result.stderr[-3000:]
    told = _results(result.stdout)["call_review"]
    assert told["is_error"] is True, told["output"]
    assert "rev.md" in told["output"] and "tools: read, grep, edit" in told["output"]
    assert "\n" not in told["output"].strip(), told["output"]
    assert not any("[child R]" in _first_user_text(b) for b in fake_openai.chat_bodies())


def test_a_plugins_tool_may_be_named_and_an_unknown_one_may_not(tmp_path, fake_openai) -> None:
    site = install_plugins(tmp_path)
    ws = _project(tmp_path)
    _agents(ws, loud="read, shout", odd="read, frobnicate")

    listed = lathe_with_plugins(tmp_path, site, "agents", "list", "-C", str(ws))

    assert listed.returncode == 1
    assert _listed(listed.stdout) == {"explore", "general", "loud"}
    (problem,) = [line for line in listed.stderr.splitlines() if "odd.md" in line]
    assert "'frobnicate'" in problem and "lathe plugins" in problem, problem

    fake_openai.responder = Script(
        parent=[Reply(calls=[_task("yell", "[child L] shout it", agent="loud")]), Reply("done")],
        children={"[child L]": [Reply(calls=[Call("shout", {"text": "hi"})]), Reply("HI!")]},
    )
    run = lathe_with_plugins(tmp_path, site, "run", "--json", "--model", "m", "--base-url",
                             fake_openai.base_url, "-C", str(ws), "shout")  # fmt: skip
    assert run.returncode == 0, run.stderr[-3000:]
    child = next(b for b in fake_openai.chat_bodies() if "[child L]" in _first_user_text(b))
    assert sorted(t["function"]["name"] for t in child["tools"]) == ["read", "shout"]
