"""Plugin tools that are Tools in type only. Each once ended every `lathe run` with a
traceback, or failed every request, while `lathe plugins` said `loaded`:

- a tool whose `parameters` is None: `tool_spec` raised AttributeError as the run wired
  its registry;
- a tool named "my tool/x" or "": sent to the model, whose endpoint rejects the names;
- a tool whose `execute` returns a str: the run died building the result, outside the
  guard that makes a tool's bug that tool's internal error.
"""

from __future__ import annotations

from pathlib import Path

from tests.fakes.openai_server import Call, Reply
from tests.plugins.test_plugins import _distribution, _workspace, lathe

_MALFORMED = """
from lathe.tools.base import Params, Tool, ToolOutput


class P(Params):
    x: str = ""


class NoParams(Tool):
    name = "noparams"
    description = "Has no parameters model."
    parameters = None

    async def execute(self, args, ctx):
        return ToolOutput("ok")


class Spaced(Tool):
    name = "my tool/x"
    description = "A name no endpoint takes."
    parameters = P

    async def execute(self, args, ctx):
        return ToolOutput("ok")


class Empty(Tool):
    name = ""
    description = "No name at all."
    parameters = P

    async def execute(self, args, ctx):
        return ToolOutput("ok")


class Good(Tool):
    name = "good"
    description = "A proper tool."
    parameters = P

    async def execute(self, args, ctx):
        return ToolOutput("good ok")


class RetStr(Tool):
    name = "retstr"
    description = "Returns a str, not a ToolOutput."
    parameters = P

    async def execute(self, args, ctx):
        return "plain string"


def tools():
    return [NoParams(), Spaced(), Empty(), Good()]


def retstr():
    return RetStr()
"""


def _site(tmp_path: Path, entry_point: str) -> Path:
    """A site where lathe-malformed declares only `entry_point` as its tools."""
    site = tmp_path / "site"
    site.mkdir()
    (site / "lathe_malformed.py").write_text(_MALFORMED)
    _distribution(site, "lathe-malformed", "0.1", f"[lathe.tools]\n{entry_point}\n")
    return site


_TOOLS = "malformed = lathe_malformed:tools"


_WHY = {
    "noparams": "a spec lathe cannot build (AttributeError:",
    "my tool/x": "a name the model cannot call",
    "": "a name the model cannot call",
}


def _skipped(name: str) -> str:
    return (
        "plugin 'malformed' (lathe.tools, from lathe-malformed 0.1) skipped: "
        f"the tool {name!r} has {_WHY[name]}"
    )


def test_a_malformed_plugin_tool_is_skipped_and_the_run_goes_on(tmp_path, fake_openai):
    site = _site(tmp_path, _TOOLS)
    ws = _workspace(tmp_path)
    fake_openai.enqueue(Reply(calls=[Call("good", {})]), Reply("Done."))

    result = lathe(tmp_path, site, "run", "--model", "m", "--base-url", fake_openai.base_url,
                   "-C", str(ws), "hi")  # fmt: skip

    assert result.returncode == 0, result.stderr
    assert "Traceback" not in result.stderr
    for name in _WHY:
        assert _skipped(name) in result.stderr
    first, second = fake_openai.chat_bodies()
    names = [t["function"]["name"] for t in first["tools"]]
    assert "good" in names
    assert not {"noparams", "my tool/x", ""} & set(names)
    assert "good ok" in str(second["messages"][-1]["content"])


def test_lathe_plugins_says_which_malformed_tools_a_run_skips(tmp_path):
    site = _site(tmp_path, _TOOLS)

    result = lathe(tmp_path, site, "plugins")

    assert result.returncode == 0, result.stdout + result.stderr
    [row] = [line for line in result.stdout.splitlines() if line.startswith("malformed ")]
    assert row.split("loaded (", 1)[1].startswith("good; noparams skipped: a spec lathe cannot")
    assert "'my tool/x' skipped: a name the model cannot call" in row
    assert "; '' skipped: a name the model cannot call" in row


def test_a_tool_returning_no_tool_output_is_its_internal_error(tmp_path, fake_openai):
    site = _site(tmp_path, "retstr = lathe_malformed:retstr")
    ws = _workspace(tmp_path)
    fake_openai.enqueue(Reply(calls=[Call("retstr", {})]), Reply("Done."))

    result = lathe(tmp_path, site, "run", "--model", "m", "--base-url", fake_openai.base_url,
                   "-C", str(ws), "hi")  # fmt: skip

    assert result.returncode == 0, result.stderr
    assert "Traceback" not in result.stderr
    _, second = fake_openai.chat_bodies()
    told = str(second["messages"][-1]["content"])
    assert "internal error in the retstr tool" in told
    assert "TypeError: it returned a str, not a ToolOutput" in told
