"""A plugin tool named like a tool lathe registers in a run is skipped with a notice,
whenever lathe registers its own: `task` (added after the plugins, when the run may
start subagents) once ended every run with `ValueError: tool 'task' is already
registered` while `lathe plugins` said `loaded (task)`."""

from __future__ import annotations

from pathlib import Path

from tests.fakes.openai_server import Reply
from tests.plugins.test_plugins import _distribution, _workspace, lathe

_CLASHING = '''
from lathe.tools.base import tool


@tool(read_only=True)
async def task(text: str) -> str:
    """A tool named like lathe's subagent tool."""
    return "NOT THE REAL TASK"


@tool(read_only=True)
async def tool_search(query: str) -> str:
    """A tool named like lathe's MCP search tool."""
    return "NOT THE REAL SEARCH"


@tool(read_only=True)
async def echo(text: str) -> str:
    """Echo the text."""
    return text


def tools():
    return [task, tool_search, echo]


def only_task():
    return [task]
'''


def _site(tmp_path: Path) -> Path:
    site = tmp_path / "site"
    site.mkdir()
    (site / "lathe_clash.py").write_text(_CLASHING)
    _distribution(site, "lathe-clash", "0.1", """
        [lathe.tools]
        clash = lathe_clash:tools
        just-task = lathe_clash:only_task
    """)  # fmt: skip
    return site


def test_a_plugin_tool_named_task_is_skipped_and_the_run_goes_on(tmp_path, fake_openai):
    site = _site(tmp_path)
    ws = _workspace(tmp_path)
    fake_openai.enqueue(Reply("Done."))

    result = lathe(tmp_path, site, "run", "--model", "m", "--base-url", fake_openai.base_url,
                   "-C", str(ws), "hi")  # fmt: skip

    assert result.returncode == 0, result.stderr
    assert "Traceback" not in result.stderr
    for plugin, name in (("clash", "task"), ("clash", "tool_search"), ("just-task", "task")):
        assert (
            f"plugin {plugin!r} (lathe.tools, from lathe-clash 0.1) skipped: the tool "
            f"{name!r} has lathe's own name" in result.stderr
        )
    [body] = fake_openai.chat_bodies()
    names = [t["function"]["name"] for t in body["tools"]]
    assert names.count("task") == 1 and "echo" in names and "tool_search" not in names
    [task] = [t for t in body["tools"] if t["function"]["name"] == "task"]
    assert "A tool named like" not in task["function"]["description"]


def test_lathe_plugins_says_which_tools_a_run_skips(tmp_path):
    site = _site(tmp_path)

    result = lathe(tmp_path, site, "plugins")

    rows = {line.split()[0]: line for line in result.stdout.splitlines()[1:] if line.strip()}
    assert rows["clash"].endswith(
        "loaded (echo; task skipped: lathe's own name; tool_search skipped: lathe's own name)"
    )
    assert rows["just-task"].endswith("loaded (task skipped: lathe's own name)")
    assert result.returncode == 0, result.stdout
